/* Calls cuprum's saxpy kernel through the example's C ABI (include/cuprum_ffi.h) on random
 * data, compares every element with the same arithmetic on the host, checks that an error
 * comes back as a status code with a message, and prints PASSED.
 *
 *   cc -std=c11 -ffp-contract=off -I include c/main.c -L <dir of libcuprum_ffi_example.so> \
 *      -lcuprum_ffi_example -Wl,-rpath,<that dir> -o saxpy && ./saxpy
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuprum_ffi.h"

static int fail(const char *what) {
  char message[512];
  cuprum_ffi_last_error(message, sizeof message);
  printf("FAILED: %s: %s\n", what, message);
  return 1;
}

int main(void) {
  CuprumFfiContext *ctx = NULL;
  if (cuprum_ffi_context_new(&ctx) != CUPRUM_FFI_OK) return fail("cuprum_ffi_context_new");
  const size_t n = 100003;
  const float a = 1.75f;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *out = malloc(n * sizeof *out);
  if (!x || !y || !out) return fail("malloc");
  srand(12345);
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)rand() / (float)RAND_MAX * 200.0f - 100.0f;
    y[i] = (float)rand() / (float)RAND_MAX * 200.0f - 100.0f;
  }
  /* Poison: a NaN pattern the kernel must overwrite. */
  memset(out, 0xFF, n * sizeof *out);
  if (cuprum_ffi_saxpy(ctx, a, x, y, out, n) != CUPRUM_FFI_OK) return fail("cuprum_ffi_saxpy");
  for (size_t i = 0; i < n; i++) {
    float product = a * x[i]; /* rounded, then added: no contraction (-ffp-contract=off) */
    float want = product + y[i];
    if (memcmp(&out[i], &want, sizeof want) != 0) {
      printf("FAILED: element %zu is %.9g, expected %.9g\n", i, out[i], want);
      return 1;
    }
  }
  /* A null pointer is a status code and a message, not a crash. */
  if (cuprum_ffi_saxpy(ctx, a, NULL, y, out, n) != CUPRUM_FFI_ERR_ARGUMENT)
    return fail("a null `x` was not refused");
  char message[256];
  if (cuprum_ffi_last_error(message, sizeof message) == 0 || strstr(message, "null") == NULL)
    return fail("no message for a null `x`");
  printf("PASSED: all %zu elements correct (backend %s)\n", n, cuprum_ffi_backend(ctx));
  cuprum_ffi_context_free(ctx);
  free(x);
  free(y);
  free(out);
  return 0;
}
