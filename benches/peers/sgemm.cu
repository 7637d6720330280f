// Peer for cuprum's sgemm example (crates/cuprum/examples/sgemm.rs): the same algorithm in
// CUDA C++, so the two can be timed side by side, plus cuBLAS SGEMM as the ceiling.
// C = A * B, f32, row-major: 32x32 output tiles, one 32x32-thread block per tile, one output
// per thread, A and B staged through two 32x32 shared tiles (zero-padded at the edges),
// fmaf in the inner loop. Checked in full on an edge-case size (517x389x301) and on 16 rows
// of the timed 4096^3 product; timed with CUDA events, median of 50 launches after warm-up.
// Build: nvcc -O3 -arch=sm_90 -o sgemm_cuda sgemm.cu -lcublas   (or -DNO_CUBLAS without it)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#ifndef NO_CUBLAS
#include <cublas_v2.h>
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

static void launch(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
  dim3 grid((n + 31) / 32, (m + 31) / 32), block(32, 32);
  sgemm_tiled<<<grid, block>>>(a, b, c, m, n, k);
}

// Runs C = A*B at m x n x k; checks `rows` (all rows when empty); times it when `reps` > 0.
static int run(std::mt19937& rng, unsigned m, unsigned n, unsigned k, int reps, size_t sample_rows) {
  std::vector<float> ha = random_matrix(rng, (size_t)m * k), hb = random_matrix(rng, (size_t)k * n);
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, ha.size() * 4));
  CHECK(cudaMalloc(&b, hb.size() * 4));
  CHECK(cudaMalloc(&c, (size_t)m * n * 4));
  CHECK(cudaMemcpy(a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(c, 0xff, (size_t)m * n * 4));  // NaN: an unwritten element fails the check
  launch(a, b, c, m, n, k);
  CHECK(cudaGetLastError());
  std::vector<float> hc((size_t)m * n);
  CHECK(cudaMemcpy(hc.data(), c, hc.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<size_t> rows;
  if (sample_rows == 0) {
    for (size_t i = 0; i < m; i++) rows.push_back(i);
  } else {
    for (size_t s = 0; s < sample_rows; s++) rows.push_back(s * (m - 1) / (sample_rows - 1));
  }
  char what[64];
  std::snprintf(what, sizeof what, "sgemm %ux%ux%u", m, n, k);
  size_t wrong = check_rows(ha, hb, hc, n, k, rows, what);
  if (wrong) {
    std::fprintf(stderr, "FAILED: %s: %zu of %zu checked elements wrong\n", what, wrong, rows.size() * n);
    return 1;
  }
  std::printf("PASSED: %s, %zu rows checked\n", what, rows.size());
  if (reps > 0) {
    double flop = 2.0 * m * n * k;
    cudaEvent_t s, e;
    CHECK(cudaEventCreate(&s));
    CHECK(cudaEventCreate(&e));
    for (int r = 0; r < 3; r++) launch(a, b, c, m, n, k);
    CHECK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int r = 0; r < reps; r++) {
      CHECK(cudaEventRecord(s));
      launch(a, b, c, m, n, k);
      CHECK(cudaEventRecord(e));
      CHECK(cudaEventSynchronize(e));
      float t;
      CHECK(cudaEventElapsedTime(&t, s, e));
      ms.push_back(t);
    }
    CHECK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    double med = ms[ms.size() / 2];
    std::printf("cuda_c++ sgemm %ux%ux%u median %.4f ms %.1f GFLOP/s\n", m, n, k, med, flop / (med * 1e6));
#ifndef NO_CUBLAS
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
    for (int r = 0; r < 3; r++) gemm();
    CHECK(cudaDeviceSynchronize());
    ms.clear();
    for (int r = 0; r < reps; r++) {
      CHECK(cudaEventRecord(s));
      gemm();
      CHECK(cudaEventRecord(e));
      CHECK(cudaEventSynchronize(e));
      float t;
      CHECK(cudaEventElapsedTime(&t, s, e));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    med = ms[ms.size() / 2];
    std::printf("cublas sgemm %ux%ux%u median %.4f ms %.1f GFLOP/s\n", m, n, k, med, flop / (med * 1e6));
    cublasDestroy(h);
#endif
  }
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
