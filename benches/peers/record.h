// The machine-readable line of every CUDA C++ peer: one JSON object per line, the same
// `{"record":"result",...}` record the cuprum examples print, which benches/report.py reads.
// The peers' lines for people (`cuda_c++ <case> <size> median <ms> ms ...`) stay beside it.
#pragma once
#include <cstdio>

// Prints the result of a timed case: `ms` the median, `bytes` and `flops` the work of one run
// (bytes moved to and from device memory, floating-point operations). The names are plain
// words (no quotes or backslashes), so they need no escaping.
static inline void print_result(const char* kase, const char* impl, const char* size, double bytes,
                                double flops, double ms) {
  std::printf("{\"record\":\"result\",\"case\":\"%s\",\"impl\":\"%s\",\"size\":\"%s\","
              "\"bytes\":%.0f,\"flops\":%.0f,\"ms\":%.6f}\n",
              kase, impl, size, bytes, flops, ms);
  std::fflush(stdout);
}
