// Peer for cuprum's bench_vecadd example: the same algorithm in CUDA C++, one element per
// thread, 256-thread blocks, timed with CUDA events (median of 100 launches after warm-up).
// Build: nvcc -O3 -arch=sm_90 -o vecadd_cuda vecadd.cu
#include <algorithm>
#include <cstdio>
#include <vector>
#include "record.h"

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); return 1; } } while (0)

__global__ void __launch_bounds__(256) vecadd(const float* a, const float* b, float* c, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void fill(float* x, size_t n, unsigned seed) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { unsigned h = (unsigned)i * 2654435761u ^ seed; x[i] = (float)(h % 20001) * 0.01f - 100.f; }
}

int main() {
  const size_t n = (size_t)1 << 28;
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, n * 4)); CHECK(cudaMalloc(&b, n * 4)); CHECK(cudaMalloc(&c, n * 4));
  unsigned grid = (unsigned)((n + 255) / 256);
  fill<<<grid, 256>>>(a, n, 1); fill<<<grid, 256>>>(b, n, 2);
  CHECK(cudaMemset(c, 0xff, n * 4));
  for (int i = 0; i < 5; i++) vecadd<<<grid, 256>>>(a, b, c, n);
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  cudaEvent_t s, e; CHECK(cudaEventCreate(&s)); CHECK(cudaEventCreate(&e));
  for (int r = 0; r < 100; r++) {
    CHECK(cudaEventRecord(s)); vecadd<<<grid, 256>>>(a, b, c, n); CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e)); float t; CHECK(cudaEventElapsedTime(&t, s, e)); ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  double med = ms[ms.size() / 2];
  std::printf("cuda_c++ vecadd n=%zu median %.4f ms  %.1f GB/s\n", n, med, 12.0 * n / (med * 1e6));
  char size[64]; std::snprintf(size, sizeof size, "n=%zu", n);
  print_result("vecadd", "cuda", size, 12.0 * n, 1.0 * n, med);
  // D2D copy bandwidth as the ceiling (bytes read + written).
  for (int r = 0; r < 3; r++) CHECK(cudaMemcpy(c, a, n * 4, cudaMemcpyDeviceToDevice));
  ms.clear();
  for (int r = 0; r < 20; r++) {
    CHECK(cudaEventRecord(s)); CHECK(cudaMemcpy(c, a, n * 4, cudaMemcpyDeviceToDevice)); CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e)); float t; CHECK(cudaEventElapsedTime(&t, s, e)); ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  med = ms[ms.size() / 2];
  std::printf("d2d copy n=%zu median %.4f ms  %.1f GB/s\n", n, med, 8.0 * n / (med * 1e6));
  print_result("copy", "cuda", size, 8.0 * n, 0.0, med);
  return 0;
}
