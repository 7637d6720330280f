// Peer for cuprum's reduce example (crates/cuprum/examples/reduce.rs): the same algorithm in
// CUDA C++, so the two can be timed side by side. Sum of 2^26 f32: 256-thread blocks, a grid
// of 8 blocks per SM striding over the input with four independent accumulators per thread,
// warp shuffles (shfl.down) and 8 per-warp partials in shared memory, then one atomicAdd of
// each block's result. Timed with CUDA events: median of 100 launches after warm-up.
// Build: nvcc -O3 -arch=sm_90 -o reduce_cuda reduce.cu
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include "record.h"

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); return 1; } } while (0)

__global__ void __launch_bounds__(256) reduce_sum(const float* x, size_t n, float* total) {
  __shared__ float warp_sums[8];
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
  while (i + 3 * stride < n) {
    a0 += x[i];
    a1 += x[i + stride];
    a2 += x[i + 2 * stride];
    a3 += x[i + 3 * stride];
    i += 4 * stride;
  }
  while (i < n) {
    a0 += x[i];
    i += stride;
  }
  float acc = (a0 + a1) + (a2 + a3);
  for (unsigned off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    float v = lane < 8 ? warp_sums[lane] : 0.f;
    for (unsigned off = 4; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) atomicAdd(total, v);
  }
}

int main() {
  const size_t n = (size_t)1 << 26;
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const unsigned grid = (unsigned)sms * 8, block = 256;

  unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.f, 1.f);
  std::vector<float> hx(n);
  for (auto& v : hx) v = dist(rng);
  double want = 0.0;
  for (float v : hx) want += v;

  float *x, *total;
  CHECK(cudaMalloc(&x, n * 4));
  CHECK(cudaMalloc(&total, 4));
  CHECK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));

  // Correctness: one launch into a zeroed accumulator.
  CHECK(cudaMemset(total, 0, 4));
  reduce_sum<<<grid, block>>>(x, n, total);
  CHECK(cudaGetLastError());
  float got = 0.f;
  CHECK(cudaMemcpy(&got, total, 4, cudaMemcpyDeviceToHost));
  // Worst-case relative error of a float sum of nonnegative terms: (depth of the summation
  // tree) * 2^-24; depth <= per-thread chain + 2 + warp (5) + block (3) + one atomic per block.
  size_t chain = (n + (size_t)grid * block - 1) / ((size_t)grid * block);
  double tol = (double)(chain + 2 + 5 + 3 + grid) * std::ldexp(1.0, -24);
  double rel = std::fabs(got - want) / want;

  // Timing: the accumulator keeps growing across launches, which does not change the work.
  for (int r = 0; r < 5; r++) reduce_sum<<<grid, block>>>(x, n, total);
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  cudaEvent_t s, e;
  CHECK(cudaEventCreate(&s));
  CHECK(cudaEventCreate(&e));
  for (int r = 0; r < 100; r++) {
    CHECK(cudaEventRecord(s));
    reduce_sum<<<grid, block>>>(x, n, total);
    CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e));
    float t;
    CHECK(cudaEventElapsedTime(&t, s, e));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  double med = ms[ms.size() / 2];
  std::printf("cuda_c++ reduce n=%zu median %.4f ms %.1f GB/s\n", n, med, 4.0 * n / (med * 1e6));
  char size[64]; std::snprintf(size, sizeof size, "n=%zu", n);
  print_result("reduce", "cuda", size, 4.0 * n, 1.0 * n, med);
  if (!(rel <= tol)) {
    std::fprintf(stderr, "FAILED: reduce sum %.9g, f64 reference %.9g, relative error %.3g > %.3g (seed %u)\n",
                 got, want, rel, tol, seed);
    return 1;
  }
  std::printf("PASSED: reduce sum %.9g vs f64 %.9g, relative error %.3g <= %.3g\n", got, want, rel, tol);
  return 0;
}
