// Peer for cuprum's sgemm example (crates/cuprum/examples/sgemm.rs): the same algorithm in
// CUDA C++, so the two can be timed side by side, plus cuBLAS SGEMM as the ceiling.
// C = A * B, f32, row-major, two kernels as in the example:
// - sgemm_tiled: 32x32 output tiles, one 32x32-thread block per tile, one output per thread,
//   A and B staged through two 32x32 shared tiles (zero-padded at the edges), fmaf inner loop;
// - sgemm_reg: 64x64 output tiles, 16x16-thread blocks, a 4x4 register block of outputs per
//   thread (rows ty + 16i, columns tx + 16j), 16-wide K slices, A's tile stored k-major with
//   a padded stride of 65.
// Checked in full on an edge-case size (517x389x301) and on 16 rows of the timed 4096^3
// product; timed with CUDA events, median of 50 launches after warm-up.
// Build: nvcc -O3 -arch=sm_90 -o sgemm_cuda sgemm.cu -lcublas   (or -DNO_CUBLAS without it)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#ifndef NO_CUBLAS
#include <cublas_v2.h>
#include "record.h"
#endif

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); return 1; } } while (0)

__global__ void __launch_bounds__(1024) sgemm_tiled(const float* a, const float* b, float* c,
                                                    unsigned m, unsigned n, unsigned k) {
  __shared__ float as[32 * 32];
  __shared__ float bs[32 * 32];
  unsigned tx = threadIdx.x, ty = threadIdx.y;
  unsigned row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
  float acc = 0.f;
  for (unsigned t = 0; t < k; t += 32) {
    as[ty * 32 + tx] = (row < m && t + tx < k) ? a[(size_t)(row * k + t + tx)] : 0.f;
    bs[ty * 32 + tx] = (t + ty < k && col < n) ? b[(size_t)((t + ty) * n + col)] : 0.f;
    __syncthreads();
    for (unsigned kk = 0; kk < 32; kk++) acc = fmaf(as[ty * 32 + kk], bs[kk * 32 + tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[(size_t)(row * n + col)] = acc;
}

__global__ void __launch_bounds__(256) sgemm_reg(const float* a, const float* b, float* c,
                                                 unsigned m, unsigned n, unsigned k) {
  __shared__ float a_tile[16 * 65];
  __shared__ float b_tile[16 * 64];
  unsigned tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  unsigned row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (unsigned t = 0; t < k; t += 16) {
    for (unsigned p = 0; p < 4; p++) {
      unsigned e = tid + 256 * p;
      unsigned r = e / 16, kc = e % 16;
      a_tile[kc * 65 + r] = (row0 + r < m && t + kc < k) ? a[(size_t)((row0 + r) * k + t + kc)] : 0.f;
      unsigned kr = e / 64, cc = e % 64;
      b_tile[kr * 64 + cc] = (t + kr < k && col0 + cc < n) ? b[(size_t)((t + kr) * n + col0 + cc)] : 0.f;
    }
    __syncthreads();
    for (unsigned kk = 0; kk < 16; kk++) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; i++) av[i] = a_tile[kk * 65 + ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; j++) bv[j] = b_tile[kk * 64 + tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    unsigned r = row0 + ty + 16 * i;
    if (r < m) {
#pragma unroll
      for (int j = 0; j < 4; j++) {
        unsigned q = col0 + tx + 16 * j;
        if (q < n) c[(size_t)(r * n + q)] = acc[i][j];
      }
    }
  }
}

static std::vector<float> random_matrix(std::mt19937& rng, size_t len) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(len);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Checks the given rows of C against an f64 reference; the tolerance is the worst-case error
// of a K-term f32 dot product, (K + 2) * 2^-24 * sum |a_ik * b_kj|.
static size_t check_rows(const std::vector<float>& a, const std::vector<float>& b,
                         const std::vector<float>& c, size_t n, size_t k,
                         const std::vector<size_t>& rows, const char* what) {
  size_t wrong = 0;
  for (size_t i : rows) {
    for (size_t j = 0; j < n; j++) {
      double ref = 0.0, mag = 0.0;
      for (size_t p = 0; p < k; p++) {
        double prod = (double)a[i * k + p] * (double)b[p * n + j];
        ref += prod;
        mag += std::fabs(prod);
      }
      double tol = (double)(k + 2) * std::ldexp(1.0, -24) * mag + 1e-30;
      double got = c[i * n + j];
      if (!(std::fabs(got - ref) <= tol)) {
        if (wrong == 0)
          std::fprintf(stderr, "%s: C[%zu][%zu] = %.9g, reference %.9g (tolerance %.3g)\n",
                       what, i, j, got, ref, tol);
        wrong++;
      }
    }
  }
  return wrong;
}

static void launch(bool reg, const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
  if (reg) {
    dim3 grid((n + 63) / 64, (m + 63) / 64), block(16, 16);
    sgemm_reg<<<grid, block>>>(a, b, c, m, n, k);
  } else {
    dim3 grid((n + 31) / 32, (m + 31) / 32), block(32, 32);
    sgemm_tiled<<<grid, block>>>(a, b, c, m, n, k);
  }
}

// Median of `reps` event-timed calls of `f` after 3 warm-up calls, in ms (negative on error).
template <class F>
static double median_ms(int reps, F f) {
  cudaEvent_t s, e;
  if (cudaEventCreate(&s) != cudaSuccess || cudaEventCreate(&e) != cudaSuccess) return -1;
  for (int r = 0; r < 3; r++) f();
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  std::vector<float> ms;
  for (int r = 0; r < reps; r++) {
    cudaEventRecord(s);
    f();
    cudaEventRecord(e);
    if (cudaEventSynchronize(e) != cudaSuccess) return -1;
    float t;
    cudaEventElapsedTime(&t, s, e);
    ms.push_back(t);
  }
  if (cudaGetLastError() != cudaSuccess) return -1;
  cudaEventDestroy(s);
  cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Runs both kernels (and cuBLAS when timing) on one random m x n x k problem; checks
// `sample_rows` rows of C spread evenly (all rows when 0); times `reps` launches when > 0.
static int run(std::mt19937& rng, unsigned m, unsigned n, unsigned k, int reps, size_t sample_rows) {
  std::vector<float> ha = random_matrix(rng, (size_t)m * k), hb = random_matrix(rng, (size_t)k * n);
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, ha.size() * 4));
  CHECK(cudaMalloc(&b, hb.size() * 4));
  CHECK(cudaMalloc(&c, (size_t)m * n * 4));
  CHECK(cudaMemcpy(a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
  std::vector<size_t> rows;
  if (sample_rows == 0) {
    for (size_t i = 0; i < m; i++) rows.push_back(i);
  } else {
    for (size_t s = 0; s < sample_rows; s++) rows.push_back(s * (m - 1) / (sample_rows - 1));
  }
  std::vector<float> hc((size_t)m * n);
  double flop = 2.0 * m * n * k;
  for (int reg = 0; reg < 2; reg++) {
    const char* name = reg ? "sgemm_reg" : "sgemm";
    CHECK(cudaMemset(c, 0xff, (size_t)m * n * 4));  // NaN: an unwritten element fails the check
    launch(reg, a, b, c, m, n, k);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hc.data(), c, hc.size() * 4, cudaMemcpyDeviceToHost));
    char what[64];
    std::snprintf(what, sizeof what, "%s %ux%ux%u", name, m, n, k);
    size_t wrong = check_rows(ha, hb, hc, n, k, rows, what);
    if (wrong) {
      std::fprintf(stderr, "FAILED: %s: %zu of %zu checked elements wrong\n", what, wrong, rows.size() * n);
      return 1;
    }
    if (reps > 0) {
      double med = median_ms(reps, [&] { launch(reg, a, b, c, m, n, k); });
      if (med < 0) {
        std::fprintf(stderr, "timing %s failed\n", what);
        return 1;
      }
      std::printf("cuda_c++ %s median %.4f ms %.1f GFLOP/s\n", what, med, flop / (med * 1e6));
      char size[64]; std::snprintf(size, sizeof size, "%ux%ux%u", m, n, k);
      print_result(name, "cuda", size, 4.0 * ((double)m * k + (double)k * n + (double)m * n), flop, med);
    }
    std::printf("PASSED: %s, %zu rows checked\n", what, rows.size());
  }
#ifndef NO_CUBLAS
  if (reps > 0) {
    // cuBLAS is column-major: row-major C = A*B is column-major C^T = B^T * A^T.
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "cublasCreate failed\n");
      return 1;
    }
    const float alpha = 1.f, beta = 0.f;
    auto gemm = [&]() {
      return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n, a, k, &beta, c, n);
    };
    CHECK(cudaMemset(c, 0xff, (size_t)m * n * 4));
    if (gemm() != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "cublasSgemm failed\n");
      return 1;
    }
    CHECK(cudaMemcpy(hc.data(), c, hc.size() * 4, cudaMemcpyDeviceToHost));
    if (check_rows(ha, hb, hc, n, k, rows, "cublas sgemm")) {
      std::fprintf(stderr, "FAILED: cuBLAS result wrong\n");
      return 1;
    }
    double med = median_ms(reps, gemm);
    if (med < 0) {
      std::fprintf(stderr, "timing cuBLAS failed\n");
      return 1;
    }
    std::printf("cublas sgemm %ux%ux%u median %.4f ms %.1f GFLOP/s\n", m, n, k, med, flop / (med * 1e6));
    char size[64]; std::snprintf(size, sizeof size, "%ux%ux%u", m, n, k);
    print_result("sgemm", "cublas", size, 4.0 * ((double)m * k + (double)k * n + (double)m * n), flop, med);
    cublasDestroy(h);
  }
#endif
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  return 0;
}

int main() {
  unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  if (run(rng, 517, 389, 301, 0, 0)) return 1;         // edges in every dimension, full check
  if (run(rng, 4096, 4096, 4096, 50, 16)) return 1;    // timed; 16 rows checked
  return 0;
}
