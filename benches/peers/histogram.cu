// Peer for cuprum's histogram example (crates/cuprum/examples/histogram.rs): the same
// algorithm in CUDA C++, so the two can be timed side by side. A 256-bin histogram of 2^28
// byte values, packed four to a u32 word (little-endian): 256-thread blocks, 8 blocks per SM
// striding over the words, each block counting into a shared 256-bin histogram with shared
// atomics, then adding its non-zero bins to the global histogram with global atomics.
// The global bins start at arbitrary values (not zero) and must end at start + count.
// Timed with CUDA events: median of 100 launches after warm-up.
// Build: nvcc -O3 -arch=sm_90 -o histogram_cuda histogram.cu
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>
#include "record.h"

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); return 1; } } while (0)

__global__ void __launch_bounds__(256) histogram(const unsigned* words, size_t n_words, unsigned* bins) {
  __shared__ unsigned hist[256];
  unsigned t = threadIdx.x;
  hist[t] = 0;
  __syncthreads();
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + t; i < n_words; i += stride) {
    unsigned w = words[i];
    atomicAdd(&hist[w & 255], 1u);
    atomicAdd(&hist[(w >> 8) & 255], 1u);
    atomicAdd(&hist[(w >> 16) & 255], 1u);
    atomicAdd(&hist[w >> 24], 1u);
  }
  __syncthreads();
  unsigned v = hist[t];
  if (v != 0) atomicAdd(&bins[t], v);
}

int main() {
  const size_t n = (size_t)1 << 28, n_words = n / 4;
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const unsigned grid = (unsigned)sms * 8, block = 256;

  std::mt19937 rng(std::random_device{}());
  std::vector<unsigned> hw(n_words);
  for (auto& w : hw) w = rng();
  std::vector<unsigned> want(256, 0), start(256);
  for (unsigned w : hw)
    for (int b = 0; b < 4; b++) want[(w >> (8 * b)) & 255]++;
  for (unsigned b = 0; b < 256; b++) start[b] = 0xDEADBEEFu ^ (b * 2654435761u);

  unsigned *words, *bins;
  CHECK(cudaMalloc(&words, n_words * 4));
  CHECK(cudaMalloc(&bins, 256 * 4));
  CHECK(cudaMemcpy(words, hw.data(), n_words * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(bins, start.data(), 256 * 4, cudaMemcpyHostToDevice));
  histogram<<<grid, block>>>(words, n_words, bins);
  CHECK(cudaGetLastError());
  std::vector<unsigned> got(256);
  CHECK(cudaMemcpy(got.data(), bins, 256 * 4, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int b = 0; b < 256; b++) {
    if (got[b] != start[b] + want[b]) {
      if (!wrong) std::fprintf(stderr, "bin %d: got %u, want %u\n", b, got[b] - start[b], want[b]);
      wrong++;
    }
  }

  for (int r = 0; r < 5; r++) histogram<<<grid, block>>>(words, n_words, bins);
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t s, e;
  CHECK(cudaEventCreate(&s));
  CHECK(cudaEventCreate(&e));
  std::vector<float> ms;
  for (int r = 0; r < 100; r++) {
    CHECK(cudaEventRecord(s));
    histogram<<<grid, block>>>(words, n_words, bins);
    CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e));
    float t;
    CHECK(cudaEventElapsedTime(&t, s, e));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  double med = ms[ms.size() / 2];
  std::printf("cuda_c++ histogram n=%zu median %.4f ms %.1f GB/s\n", n, med, 1.0 * n / (med * 1e6));
  char size[64]; std::snprintf(size, sizeof size, "n=%zu", n);
  print_result("histogram", "cuda", size, 1.0 * n, 0.0, med);
  if (wrong) {
    std::fprintf(stderr, "FAILED: histogram: %d of 256 bins wrong\n", wrong);
    return 1;
  }
  std::printf("PASSED: histogram of %zu values, all 256 bins exact\n", n);
  return 0;
}
