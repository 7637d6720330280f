// The CUDA C++ peer of crates/cuprum/examples/launch_overhead.rs: host time per launch of the
// same small kernel (out = a x + y on 1024 floats, 4 blocks of 256) on one stream, with the
// runtime API's <<<>>> and with the driver's cuLaunchKernel, and per node and per replay of a
// CUDA graph of 32 such launches (stream capture, instantiate, cudaGraphLaunch). Medians of 7
// rounds of 20000 launches (graph: 20000 / 32 replays), printed as a table and as the same
// {"record":"launch_overhead",...} lines the cuprum example prints.
//
//   nvcc -O3 -arch=sm_90 -o launch_overhead benches/peers/launch_overhead.cu -lcuda
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>

#define CHECK(x)                                                                 \
  do {                                                                           \
    cudaError_t e = (x);                                                         \
    if (e != cudaSuccess) {                                                      \
      std::printf("FAILED: %s: %s\n", #x, cudaGetErrorString(e));                \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

__global__ void axpy(float a, const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static void report(const char* kase, double us) {
  std::printf("| %s | %.2f |\n", kase, us);
  std::printf("{\"record\":\"launch_overhead\",\"case\":\"%s\",\"us\":%.4f}\n", kase, us);
}

int main() {
  const int n = 1024, launches = 20000, rounds = 7, nodes = 32;
  float *x, *y, *out;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  std::vector<float> ones(n, 1.0f), twos(n, 2.0f);
  CHECK(cudaMemcpy(x, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, twos.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  float a = 3.0f;
  using clock = std::chrono::steady_clock;
  auto us_since = [](clock::time_point t0, double count) {
    return std::chrono::duration<double, std::micro>(clock::now() - t0).count() / count;
  };
  std::printf("| case | µs per launch (median of %d x %d) |\n|---|---|\n", rounds, launches);

  std::vector<double> per;
  for (int r = 0; r < rounds; r++) {
    auto t0 = clock::now();
    for (int k = 0; k < launches; k++) axpy<<<n / 256, 256, 0, s>>>(a, x, y, out, n);
    per.push_back(us_since(t0, launches));
    CHECK(cudaStreamSynchronize(s));
  }
  report("CUDA C++: <<<>>> on one stream", median(per));

  CUfunction f;
  if (cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&f), reinterpret_cast<const void*>(axpy)) !=
      cudaSuccess) {
    std::printf("FAILED: cudaGetFuncBySymbol\n");
    return 1;
  }
  int nn = n;
  void* params[] = {&a, &x, &y, &out, &nn};
  per.clear();
  for (int r = 0; r < rounds; r++) {
    auto t0 = clock::now();
    for (int k = 0; k < launches; k++)
      cuLaunchKernel(f, n / 256, 1, 1, 256, 1, 1, 0, reinterpret_cast<CUstream>(s), params, nullptr);
    per.push_back(us_since(t0, launches));
    CHECK(cudaStreamSynchronize(s));
  }
  report("CUDA C++: cuLaunchKernel on one stream", median(per));

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < nodes; k++) axpy<<<n / 256, 256, 0, s>>>(a, x, y, out, n);
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const int replays = launches / nodes;
  per.clear();
  std::vector<double> per_replay;
  for (int r = 0; r < rounds; r++) {
    auto t0 = clock::now();
    for (int k = 0; k < replays; k++) cudaGraphLaunch(exec, s);
    double us = us_since(t0, replays);
    per_replay.push_back(us);
    per.push_back(us / nodes);
    CHECK(cudaStreamSynchronize(s));
  }
  report("CUDA C++: graph of 32 launches, per node", median(per));
  report("CUDA C++: graph of 32 launches, per replay", median(per_replay));

  std::vector<float> got(n);
  CHECK(cudaMemcpy(got.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++)
    if (got[i] != 5.0f) {
      std::printf("FAILED: element %d is %f, not 5\n", i, got[i]);
      return 1;
    }
  std::printf("PASSED: all %d elements correct\n", n);
  return 0;
}
