// Peer for cuprum's scan example (crates/cuprum/examples/scan.rs): the same algorithm in
// CUDA C++, so the two can be timed side by side. Inclusive prefix sum of 2^26 u32 (wrapping),
// in three phases: (1) 1024-thread blocks scan their 1024 elements (shfl.up within each warp,
// the 32 warp totals scanned by warp 0 through shared memory) and write each block's total;
// (2) the block totals are scanned by the same kernel, recursively, until one block is left;
// (3) every block but the first adds the scanned total of the blocks before it.
// Timed with CUDA events (all launches of one scan): median of 100 after warm-up.
// Build: nvcc -O3 -arch=sm_90 -o scan_cuda scan.cu
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>
#include "record.h"

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); return 1; } } while (0)

__global__ void __launch_bounds__(1024) scan_blocks(const unsigned* x, size_t n, unsigned* out, unsigned* totals) {
  __shared__ unsigned warp_sums[32];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned s = i < n ? x[i] : 0u;
  for (unsigned d = 1; d < 32; d *= 2) {
    unsigned y = __shfl_up_sync(0xffffffffu, s, d);
    if (lane >= d) s += y;
  }
  if (lane == 31) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    unsigned t = warp_sums[lane];
    for (unsigned d = 1; d < 32; d *= 2) {
      unsigned y = __shfl_up_sync(0xffffffffu, t, d);
      if (lane >= d) t += y;
    }
    warp_sums[lane] = t;
  }
  __syncthreads();
  if (warp > 0) s += warp_sums[warp - 1];
  if (i < n) out[i] = s;
  if (threadIdx.x == 1023) totals[blockIdx.x] = s;
}

__global__ void __launch_bounds__(1024) add_offsets(const unsigned* offsets, unsigned* out, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned b = blockIdx.x;
  if (b > 0 && i < n) out[i] += offsets[b - 1];
}

static unsigned blocks_for(size_t n) { return (unsigned)((n + 1023) / 1024); }

// levels[0] = {x, out}; levels[l] = {totals of level l-1, their scan}; each level's totals are
// the next level's input. A level of one block ends the recursion.
struct Level { unsigned* in; unsigned* out; size_t n; };

static void scan(const std::vector<Level>& levels, unsigned* last_totals) {
  for (size_t l = 0; l < levels.size(); l++) {
    unsigned* totals = l + 1 < levels.size() ? levels[l + 1].in : last_totals;
    scan_blocks<<<blocks_for(levels[l].n), 1024>>>(levels[l].in, levels[l].n, levels[l].out, totals);
  }
  for (size_t l = levels.size() - 1; l > 0; l--)
    add_offsets<<<blocks_for(levels[l - 1].n), 1024>>>(levels[l].out, levels[l - 1].out, levels[l - 1].n);
}

int main() {
  const size_t n = (size_t)1 << 26;
  std::mt19937 rng(std::random_device{}());
  std::vector<unsigned> hx(n), want(n);
  for (auto& v : hx) v = rng();
  unsigned run = 0;
  for (size_t i = 0; i < n; i++) want[i] = run += hx[i];

  std::vector<Level> levels;
  size_t len = n;
  while (true) {
    Level lv{nullptr, nullptr, len};
    CHECK(cudaMalloc(&lv.in, len * 4));
    CHECK(cudaMalloc(&lv.out, len * 4));
    CHECK(cudaMemset(lv.out, 0xef, len * 4));  // poison: 0xefefefef
    levels.push_back(lv);
    if (blocks_for(len) == 1) break;
    len = blocks_for(len);
  }
  unsigned* last_totals;
  CHECK(cudaMalloc(&last_totals, 4));
  CHECK(cudaMemcpy(levels[0].in, hx.data(), n * 4, cudaMemcpyHostToDevice));
  scan(levels, last_totals);
  CHECK(cudaGetLastError());
  std::vector<unsigned> got(n);
  CHECK(cudaMemcpy(got.data(), levels[0].out, n * 4, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) {
    if (got[i] != want[i]) {
      if (!wrong) std::fprintf(stderr, "element %zu: got %u, want %u\n", i, got[i], want[i]);
      wrong++;
    }
  }

  for (int r = 0; r < 5; r++) scan(levels, last_totals);
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t s, e;
  CHECK(cudaEventCreate(&s));
  CHECK(cudaEventCreate(&e));
  std::vector<float> ms;
  for (int r = 0; r < 100; r++) {
    CHECK(cudaEventRecord(s));
    scan(levels, last_totals);
    CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e));
    float t;
    CHECK(cudaEventElapsedTime(&t, s, e));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  double med = ms[ms.size() / 2];
  // Throughput counts the 8 bytes per element a single-pass scan must move.
  std::printf("cuda_c++ scan n=%zu median %.4f ms %.1f GB/s\n", n, med, 8.0 * n / (med * 1e6));
  char size[64]; std::snprintf(size, sizeof size, "n=%zu", n);
  print_result("scan", "cuda", size, 8.0 * n, 1.0 * n, med);
  if (wrong) {
    std::fprintf(stderr, "FAILED: scan: %zu of %zu elements wrong\n", wrong, n);
    return 1;
  }
  std::printf("PASSED: scan of %zu u32, all elements exact (%zu levels)\n", n, levels.size());
  return 0;
}
