// Peer for cuprum's nbody example (crates/cuprum/examples/nbody.rs): the same algorithm in
// CUDA C++ (cuda-samples' integrateBodies), so the two can be timed side by side. Bodies are
// float4 (x, y, z, mass); each block of 256 threads stages the bodies in tiles of 256 in
// shared memory, every thread adds the pull of each tile on its own body, then updates its
// velocity and position. The same arithmetic as the example (1 / sqrt, not rsqrt); nvcc may
// contract the multiply-adds, so the result is checked against the CPU to a relative
// tolerance. Checked on a partial last tile (1000 bodies) and on 64 bodies of the timed
// 65536; timed with CUDA events, median of 20 launches after warm-up; 20 flops per
// interaction, as cuda-samples counts them.
// Build: nvcc -O3 -arch=sm_90 -o nbody_cuda nbody.cu
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include "record.h"

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); return 1; } } while (0)

constexpr int TILE = 256;
constexpr float DT = 0.016f, DAMPING = 1.0f, SOFTENING_SQ = 0.01f;

__global__ void __launch_bounds__(256) integrate_bodies(const float4* pos, const float4* vel,
                                                        float4* new_pos, float4* new_vel,
                                                        unsigned n) {
  __shared__ float4 shared_pos[TILE];
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 me = i < n ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (unsigned tile0 = 0; tile0 < n; tile0 += TILE) {
    unsigned g = tile0 + threadIdx.x;
    shared_pos[threadIdx.x] = g < n ? pos[g] : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    for (int j = 0; j < TILE; j++) {
      float4 other = shared_pos[j];
      float rx = other.x - me.x, ry = other.y - me.y, rz = other.z - me.z;
      float dist_sqr = rx * rx + ry * ry + rz * rz + SOFTENING_SQ;
      float inv_dist = 1.0f / sqrtf(dist_sqr);
      float s = other.w * (inv_dist * inv_dist * inv_dist);
      ax += rx * s;
      ay += ry * s;
      az += rz * s;
    }
    __syncthreads();
  }
  if (i < n) {
    float4 v = vel[i];
    float4 nv = make_float4((v.x + ax * DT) * DAMPING, (v.y + ay * DT) * DAMPING,
                            (v.z + az * DT) * DAMPING, v.w);
    new_vel[i] = nv;
    new_pos[i] = make_float4(me.x + nv.x * DT, me.y + nv.y * DT, me.z + nv.z * DT, me.w);
  }
}

static int run(std::mt19937& rng, unsigned n, unsigned checked, int reps) {
  std::vector<float4> hpos(n), hvel(n), npos(n), nvel(n);
  std::uniform_real_distribution<float> p(-100.f, 100.f), m(0.5f, 2.f), v(-1.f, 1.f);
  for (auto& b : hpos) b = make_float4(p(rng), p(rng), p(rng), m(rng));
  for (auto& b : hvel) b = make_float4(v(rng), v(rng), v(rng), 0.f);
  float4 *pos, *vel, *opos, *ovel;
  size_t bytes = sizeof(float4) * n;
  CHECK(cudaMalloc(&pos, bytes));
  CHECK(cudaMalloc(&vel, bytes));
  CHECK(cudaMalloc(&opos, bytes));
  CHECK(cudaMalloc(&ovel, bytes));
  CHECK(cudaMemcpy(pos, hpos.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(vel, hvel.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(opos, 0xff, bytes));  // NaN: an unwritten body fails the check
  CHECK(cudaMemset(ovel, 0xff, bytes));
  unsigned blocks = (n + TILE - 1) / TILE;
  integrate_bodies<<<blocks, TILE>>>(pos, vel, opos, ovel, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(npos.data(), opos, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(nvel.data(), ovel, bytes, cudaMemcpyDeviceToHost));
  unsigned step = std::max(1u, n / std::max(1u, checked));
  for (unsigned i = 0; i < n; i += step) {
    double ax = 0, ay = 0, az = 0;
    for (unsigned j = 0; j < n; j++) {
      double rx = hpos[j].x - hpos[i].x, ry = hpos[j].y - hpos[i].y, rz = hpos[j].z - hpos[i].z;
      double d = std::sqrt(rx * rx + ry * ry + rz * rz + SOFTENING_SQ);
      double s = hpos[j].w / (d * d * d);
      ax += rx * s;
      ay += ry * s;
      az += rz * s;
    }
    double want[3] = {(hvel[i].x + ax * DT) * DAMPING, (hvel[i].y + ay * DT) * DAMPING,
                      (hvel[i].z + az * DT) * DAMPING};
    double got[3] = {nvel[i].x, nvel[i].y, nvel[i].z};
    for (int c = 0; c < 3; c++) {
      if (!(std::fabs(got[c] - want[c]) <= 1e-3 * (std::fabs(want[c]) + 1.0))) {
        std::fprintf(stderr, "FAILED: nbody %u: body %u velocity[%d] = %g, want %g\n", n, i, c,
                     got[c], want[c]);
        return 1;
      }
    }
  }
  if (reps > 0) {
    for (int r = 0; r < 2; r++) integrate_bodies<<<blocks, TILE>>>(pos, vel, opos, ovel, n);
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t s, e;
    CHECK(cudaEventCreate(&s));
    CHECK(cudaEventCreate(&e));
    std::vector<float> ms;
    for (int r = 0; r < reps; r++) {
      CHECK(cudaEventRecord(s));
      integrate_bodies<<<blocks, TILE>>>(pos, vel, opos, ovel, n);
      CHECK(cudaEventRecord(e));
      CHECK(cudaEventSynchronize(e));
      float t;
      CHECK(cudaEventElapsedTime(&t, s, e));
      ms.push_back(t);
    }
    CHECK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    double med = ms[ms.size() / 2];
    double flops = 20.0 * n * (double)n;
    std::printf("cuda_c++ nbody %u bodies median %.4f ms %.1f GFLOP/s\n", n, med,
                flops / (med * 1e6));
    char size[64];
    std::snprintf(size, sizeof size, "%u", n);
    print_result("nbody", "cuda", size, 0.0, flops, med);
  }
  std::printf("PASSED: nbody %u bodies\n", n);
  CHECK(cudaFree(pos));
  CHECK(cudaFree(vel));
  CHECK(cudaFree(opos));
  CHECK(cudaFree(ovel));
  return 0;
}

int main() {
  std::mt19937 rng(std::random_device{}());
  if (run(rng, 1000, 1000, 0)) return 1;  // a partial last tile
  if (run(rng, 65536, 64, 20)) return 1;
  return 0;
}
