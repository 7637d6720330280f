// Peer for cuprum's transpose example (crates/cuprum/examples/transpose.rs): the same
// algorithm in CUDA C++, so the two can be timed side by side. out = in^T for a row-major
// f32 matrix: one 32x32 tile per block staged through a 32x33 padded shared array (the pad
// keeps the column reads free of bank conflicts), 32x8 threads per block, each thread moving
// 4 rows of the tile. Checked exactly on an odd-sized rectangle (3001x1999) and on the timed
// 8192x8192 matrix; timed with CUDA events, median of 100 launches after warm-up.
// Build: nvcc -O3 -arch=sm_90 -o transpose_cuda transpose.cu
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "record.h"

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); return 1; } } while (0)

// `in` is h rows of w; `out` is w rows of h.
__global__ void __launch_bounds__(256) transpose(const float* in, float* out, unsigned w, unsigned h) {
  __shared__ float tile[32 * 33];
  unsigned tx = threadIdx.x, ty = threadIdx.y;
  unsigned bx = blockIdx.x * 32, by = blockIdx.y * 32;
  unsigned x = bx + tx;
  for (unsigned j = 0; j < 32; j += 8) {
    unsigned y = by + ty + j;
    if (x < w && y < h) tile[(ty + j) * 33 + tx] = in[(size_t)y * w + x];
  }
  __syncthreads();
  x = by + tx;
  for (unsigned j = 0; j < 32; j += 8) {
    unsigned y = bx + ty + j;
    if (x < h && y < w) out[(size_t)y * h + x] = tile[tx * 33 + ty + j];
  }
}

static int run(std::mt19937& rng, unsigned w, unsigned h, int reps) {
  size_t len = (size_t)w * h;
  std::vector<float> hin(len), hout(len);
  std::uniform_real_distribution<float> dist(-1000.f, 1000.f);
  for (auto& v : hin) v = dist(rng);
  float *in, *out;
  CHECK(cudaMalloc(&in, len * 4));
  CHECK(cudaMalloc(&out, len * 4));
  CHECK(cudaMemcpy(in, hin.data(), len * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(out, 0xff, len * 4));  // NaN: an unwritten element fails the check
  dim3 grid((w + 31) / 32, (h + 31) / 32), block(32, 8);
  transpose<<<grid, block>>>(in, out, w, h);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(hout.data(), out, len * 4, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t r = 0; r < h; r++)
    for (size_t c = 0; c < w; c++)
      if (std::memcmp(&hout[c * h + r], &hin[r * w + c], 4) != 0) wrong++;
  if (wrong) {
    std::fprintf(stderr, "FAILED: transpose %ux%u: %zu of %zu elements wrong\n", h, w, wrong, len);
    return 1;
  }
  if (reps > 0) {
    for (int r = 0; r < 5; r++) transpose<<<grid, block>>>(in, out, w, h);
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t s, e;
    CHECK(cudaEventCreate(&s));
    CHECK(cudaEventCreate(&e));
    std::vector<float> ms;
    for (int r = 0; r < reps; r++) {
      CHECK(cudaEventRecord(s));
      transpose<<<grid, block>>>(in, out, w, h);
      CHECK(cudaEventRecord(e));
      CHECK(cudaEventSynchronize(e));
      float t;
      CHECK(cudaEventElapsedTime(&t, s, e));
      ms.push_back(t);
    }
    CHECK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    double med = ms[ms.size() / 2];
    std::printf("cuda_c++ transpose %ux%u median %.4f ms %.1f GB/s\n", h, w, med, 8.0 * len / (med * 1e6));
    char size[64]; std::snprintf(size, sizeof size, "%ux%u", h, w);
    print_result("transpose", "cuda", size, 8.0 * len, 0.0, med);
  }
  std::printf("PASSED: transpose %ux%u, all %zu elements exact\n", h, w, len);
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  return 0;
}

int main() {
  std::mt19937 rng(std::random_device{}());
  if (run(rng, 3001, 1999, 0)) return 1;   // partial tiles on both edges
  if (run(rng, 8192, 8192, 100)) return 1;
  return 0;
}
