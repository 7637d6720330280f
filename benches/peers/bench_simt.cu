// Peer of cuprum's bench_simt example (crates/cuprum/examples/bench_simt.rs): the same four
// algorithms in CUDA C++ (grid-stride vector add, SAXPY, row softmax, bf16 mma.sync GEMM),
// plus cuBLAS bf16 GEMM (cublasGemmEx, CUDA_R_16BF in, f32 out, compute 32F) as the ceiling
// for hgemm. Same sizes, data, launch shapes and timing (median of 50 event-timed launches
// after 5 warm-up ones) as the cuprum example; each case is checked (sampled) on the CPU.
// Prints a line for people and a JSON record `{"record":"result","case":..,"impl":"cuda"|"cublas",
// "size":..,"bytes":..,"flops":..,"ms":..}` (record.h) per case, read by benches/report.py. A failing case prints FAILED and the others still run.
// Build: nvcc -O3 -arch=sm_90 -o bench_simt_cuda bench_simt.cu -lcublas   (or -DNO_CUBLAS)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#ifndef NO_CUBLAS
#include <cublas_v2.h>
#include "record.h"
#endif

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); return false; } } while (0)

__global__ void __launch_bounds__(256) vecadd_gridstride(const float* a, const float* b, float* c, size_t n) {
  size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
  size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  // The idiomatic vectorized form: 16-byte float4 accesses (cudaMalloc aligns to 256 bytes).
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* c4 = reinterpret_cast<float4*>(c);
  for (size_t i = first; i < n4; i += stride) {
    float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  if (first < n - 4 * n4) { size_t j = 4 * n4 + first; c[j] = a[j] + b[j]; }
}

__global__ void __launch_bounds__(256) saxpy(float alpha, const float* x, float* y, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaf(alpha, x[i], y[i]);
}

__global__ void __launch_bounds__(256) softmax_rows(const float* x, float* y, unsigned cols) {
  __shared__ float maxes[8], sums[8];
  size_t base = (size_t)blockIdx.x * cols;
  unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  float m = -INFINITY;
  for (unsigned j = tid; j < cols; j += 256) m = fmaxf(m, x[base + j]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) maxes[warp] = m;
  __syncthreads();
  float row_max = maxes[0];
  for (int w = 1; w < 8; w++) row_max = fmaxf(row_max, maxes[w]);
  float s = 0.f;
  for (unsigned j = tid; j < cols; j += 256) s += expf(x[base + j] - row_max);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) sums[warp] = s;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < 8; w++) total += sums[w];
  float inv = 1.f / total;
  for (unsigned j = tid; j < cols; j += 256) y[base + j] = expf(x[base + j] - row_max) * inv;
}

__device__ __forceinline__ void mma_bf16(const uint32_t a[4], const uint32_t b[2], float c[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// C (m x n, f32) = A (m x k bf16, row-major) * B, B given as Bt (n x k, row-major); words of two
// bf16 along k. 4 warps (2x2) per 64x64 block tile, a 32x32 warp tile of 2x4 mma tiles with
// fragments loaded from global memory: the algorithm of cuprum's hgemm_mma.
__global__ void __launch_bounds__(128) hgemm_mma(const uint32_t* a, const uint32_t* bt, float* c,
                                                 unsigned n, unsigned k) {
  unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  size_t kw = k / 2;
  size_t row0 = (size_t)blockIdx.y * 64 + (w / 2) * 32, col0 = (size_t)blockIdx.x * 64 + (w % 2) * 32;
  float acc[2][4][4] = {};
  for (size_t kk = 0; kk < kw; kk += 8) {
    uint32_t fa[2][4], fb[4][2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
      size_t r = (row0 + 16 * i + g) * kw + t + kk;
      fa[i][0] = a[r]; fa[i][1] = a[r + 8 * kw]; fa[i][2] = a[r + 4]; fa[i][3] = a[r + 8 * kw + 4];
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
      size_t r = (col0 + 8 * j + g) * kw + t + kk;
      fb[j][0] = bt[r]; fb[j][1] = bt[r + 4];
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) mma_bf16(fa[i], fb[j], acc[i][j]);
  }
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      size_t r = (row0 + 16 * i + g) * n + col0 + 8 * j + 2 * t;
      c[r] = acc[i][j][0]; c[r + 1] = acc[i][j][1];
      c[r + 8 * n] = acc[i][j][2]; c[r + 8 * n + 1] = acc[i][j][3];
    }
}

// Median of 50 event-timed runs after 5 warm-up ones, in ms; negative on an error.
static double median_ms(const std::function<void()>& launch) {
  for (int i = 0; i < 5; i++) launch();
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  cudaEvent_t s, e;
  cudaEventCreate(&s); cudaEventCreate(&e);
  std::vector<float> ms;
  for (int r = 0; r < 50; r++) {
    cudaEventRecord(s); launch(); cudaEventRecord(e);
    cudaEventSynchronize(e);
    float t = 0; cudaEventElapsedTime(&t, s, e); ms.push_back(t);
  }
  cudaEventDestroy(s); cudaEventDestroy(e);
  if (cudaGetLastError() != cudaSuccess) return -1;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

static void result(const char* c, const char* impl, const char* size, double bytes, double flops, double ms) {
  std::printf("%s %s %s median %.4f ms %.1f GB/s %.1f GFLOP/s\n", impl, c, size, ms, bytes / (ms * 1e6),
              flops / (ms * 1e6));
  print_result(c, impl, size, bytes, flops, ms);
}

static std::vector<size_t> sample(size_t n) {
  std::vector<size_t> v;
  for (size_t i = 0; i < n; i += 997) v.push_back(i);
  for (size_t i = n > 4096 ? n - 4096 : 0; i < n; i++) v.push_back(i);
  return v;
}

static int sms() {
  int d = 0, v = 0;
  cudaGetDevice(&d);
  cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d);
  return v;
}

static bool case_vecadd() {
  const size_t n = (size_t)1 << 28;
  std::vector<float> ha(n), hb(n), hc(n);
  for (size_t i = 0; i < n; i++) { ha[i] = (float)(i % 1000) * 0.5f; hb[i] = (float)(i % 777) - 300.f; }
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, n * 4)); CHECK(cudaMalloc(&b, n * 4)); CHECK(cudaMalloc(&c, n * 4));
  CHECK(cudaMemcpy(a, ha.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(c, 0xff, n * 4));
  // 4 blocks of 256 threads per SM (GRIDSTRIDE_BLOCKS_PER_SM overrides): the same grid as
  // crates/cuprum/examples/bench_simt.rs, which says why.
  const char* per_sm_env = std::getenv("GRIDSTRIDE_BLOCKS_PER_SM");
  unsigned per_sm = per_sm_env && std::atoi(per_sm_env) > 0 ? (unsigned)std::atoi(per_sm_env) : 4;
  unsigned grid = sms() * per_sm;
  auto launch = [&] { vecadd_gridstride<<<grid, 256>>>(a, b, c, n); };
  launch();
  CHECK(cudaMemcpy(hc.data(), c, n * 4, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i : sample(n)) wrong += hc[i] != ha[i] + hb[i];
  double ms = median_ms(launch);
  cudaFree(a); cudaFree(b); cudaFree(c);
  if (wrong || ms < 0) { std::fprintf(stderr, "FAILED: vecadd_gridstride: %zu wrong\n", wrong); return false; }
  char size[64]; std::snprintf(size, sizeof size, "n=%zu", n);
  result("vecadd_gridstride", "cuda", size, 12.0 * n, 1.0 * n, ms);
  return true;
}

static bool case_saxpy() {
  const size_t n = (size_t)1 << 28;
  const float alpha = 2.f;
  std::vector<float> hx(n), hy(n), got(n);
  for (size_t i = 0; i < n; i++) { hx[i] = (float)(i % 1024) * 0.25f; hy[i] = (float)(i % 333); }
  float *x, *y;
  CHECK(cudaMalloc(&x, n * 4)); CHECK(cudaMalloc(&y, n * 4));
  CHECK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, hy.data(), n * 4, cudaMemcpyHostToDevice));
  unsigned grid = (unsigned)((n + 255) / 256);
  auto launch = [&] { saxpy<<<grid, 256>>>(alpha, x, y, n); };
  launch();
  CHECK(cudaMemcpy(got.data(), y, n * 4, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i : sample(n)) wrong += got[i] != std::fma(alpha, hx[i], hy[i]);
  double ms = median_ms(launch);
  cudaFree(x); cudaFree(y);
  if (wrong || ms < 0) { std::fprintf(stderr, "FAILED: saxpy: %zu wrong\n", wrong); return false; }
  char size[64]; std::snprintf(size, sizeof size, "n=%zu", n);
  result("saxpy", "cuda", size, 12.0 * n, 2.0 * n, ms);
  return true;
}

static bool case_softmax() {
  const size_t rows = 8192, cols = 4096, len = rows * cols;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-8.f, 8.f);
  std::vector<float> hx(len), got(len);
  for (auto& v : hx) v = dist(rng);
  float *x, *y;
  CHECK(cudaMalloc(&x, len * 4)); CHECK(cudaMalloc(&y, len * 4));
  CHECK(cudaMemcpy(x, hx.data(), len * 4, cudaMemcpyHostToDevice));
  auto launch = [&] { softmax_rows<<<(unsigned)rows, 256>>>(x, y, (unsigned)cols); };
  launch();
  CHECK(cudaMemcpy(got.data(), y, len * 4, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t r = 0; r < rows; r += 61) {
    const float* row = &hx[r * cols];
    double mx = -INFINITY, s = 0;
    for (size_t j = 0; j < cols; j++) mx = std::max(mx, (double)row[j]);
    for (size_t j = 0; j < cols; j++) s += std::exp(row[j] - mx);
    for (size_t j = 0; j < cols; j++) {
      double want = std::exp(row[j] - mx) / s, g = got[r * cols + j];
      if (!(std::fabs(g - want) <= 1e-5 * want + 1e-9)) wrong++;
    }
  }
  double ms = median_ms(launch);
  cudaFree(x); cudaFree(y);
  if (wrong || ms < 0) { std::fprintf(stderr, "FAILED: softmax_rows: %zu wrong\n", wrong); return false; }
  char size[64]; std::snprintf(size, sizeof size, "%zux%zu", rows, cols);
  result("softmax_rows", "cuda", size, 8.0 * len, 5.0 * len, ms);
  return true;
}

// bf16 GEMM of dim^3: the mma.sync kernel (when `with_mma`) and cuBLAS, each checked on a
// few rows against a double-precision reference.
static bool case_hgemm(size_t dim, bool with_mma) {
  const size_t m = dim, n = dim, k = dim;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<__nv_bfloat16> ha(m * k), hbt(n * k);
  for (auto& v : ha) v = __float2bfloat16(dist(rng));
  for (auto& v : hbt) v = __float2bfloat16(dist(rng));
  __nv_bfloat16 *a, *bt; float* c;
  CHECK(cudaMalloc(&a, m * k * 2)); CHECK(cudaMalloc(&bt, n * k * 2)); CHECK(cudaMalloc(&c, m * n * 4));
  CHECK(cudaMemcpy(a, ha.data(), m * k * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(bt, hbt.data(), n * k * 2, cudaMemcpyHostToDevice));
  std::vector<float> got(m * n);
  const size_t rows[] = {0, 1, 17, 1000, 2049, m - 1};
  auto check = [&](const char* who) {
    if (cudaMemcpy(got.data(), c, m * n * 4, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
    size_t wrong = 0;
    for (size_t i : rows)
      for (size_t j = 0; j < n; j++) {
        double want = 0, mag = 0;
        for (size_t q = 0; q < k; q++) {
          double p = (double)__bfloat162float(ha[i * k + q]) * (double)__bfloat162float(hbt[j * k + q]);
          want += p; mag += std::fabs(p);
        }
        if (!(std::fabs(got[i * n + j] - want) <= mag * std::ldexp(1.0, -12) + 1e-6)) wrong++;
      }
    if (wrong) std::fprintf(stderr, "FAILED: hgemm %s: %zu checked elements wrong\n", who, wrong);
    return wrong == 0;
  };
  char size[64]; std::snprintf(size, sizeof size, "%zux%zux%zu", m, n, k);
  const double bytes = 2.0 * (m * k + n * k) + 4.0 * m * n, flops = 2.0 * m * n * k;
  bool ok = true;
  if (with_mma) {
    CHECK(cudaMemset(c, 0xff, m * n * 4));
    dim3 grid((unsigned)(n / 64), (unsigned)(m / 64));
    auto launch = [&] {
      hgemm_mma<<<grid, 128>>>((const uint32_t*)a, (const uint32_t*)bt, c, (unsigned)n, (unsigned)k);
    };
    launch();
    if (check("mma")) {
      double ms = median_ms(launch);
      if (ms >= 0) result("hgemm_mma", "cuda", size, bytes, flops, ms); else ok = false;
    } else ok = false;
  }
#ifndef NO_CUBLAS
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { std::fprintf(stderr, "FAILED: cublasCreate\n"); return false; }
  const float alpha = 1.f, beta = 0.f;
  // Row-major C (m x n) = A · Bt^T is, column-major, C^T (n x m) = Bt^T... i.e. op(X) = T on
  // Bt seen column-major as k x n, op(Y) = N on A seen column-major as k x m.
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  auto blas = [&] {
    st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, bt, CUDA_R_16BF, (int)k, a,
                      CUDA_R_16BF, (int)k, &beta, c, CUDA_R_32F, (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  CHECK(cudaMemset(c, 0xff, m * n * 4));
  blas();
  if (st == CUBLAS_STATUS_SUCCESS && check("cublas")) {
    double ms = median_ms(blas);
    if (ms >= 0 && st == CUBLAS_STATUS_SUCCESS) result("hgemm_mma", "cublas", size, bytes, flops, ms); else ok = false;
  } else {
    std::fprintf(stderr, "FAILED: cublasGemmEx bf16 (status %d)\n", (int)st);
    ok = false;
  }
  cublasDestroy(h);
#endif
  cudaFree(a); cudaFree(bt); cudaFree(c);
  return ok;
}

int main() {
  bool ok = true;
  ok &= case_vecadd();
  ok &= case_saxpy();
  ok &= case_softmax();
  ok &= case_hgemm(4096, true);
  // cuBLAS alone at 8192^3: the Hopper GEMM's peer there (hopper_gemm --size 8192).
  ok &= case_hgemm(8192, false);
  if (!ok) { std::fprintf(stderr, "FAILED: bench_simt.cu: some cases failed\n"); return 1; }
  std::printf("PASSED: bench_simt.cu\n");
  return 0;
}
