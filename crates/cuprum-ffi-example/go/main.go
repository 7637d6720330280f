// Calls cuprum's saxpy kernel from Go through cgo and the example's C ABI
// (include/cuprum_ffi.h) on random data, compares every element with the same arithmetic in
// Go, checks that an error comes back as a status code with a message, and prints PASSED.
//
//	CGO_CFLAGS=-I<crate>/include CGO_LDFLAGS="-L<lib dir> -lcuprum_ffi_example -Wl,-rpath,<lib dir>" go run .
package main

/*
#include <stdlib.h>
#include "cuprum_ffi.h"
*/
import "C"

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"unsafe"
)

func lastError() string {
	buf := make([]byte, 512)
	n := C.cuprum_ffi_last_error((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
	if int(n) < len(buf) {
		return string(buf[:n])
	}
	return string(buf[:len(buf)-1])
}

func fail(what string) {
	fmt.Printf("FAILED: %s: %s\n", what, lastError())
	os.Exit(1)
}

func main() {
	var ctx *C.CuprumFfiContext
	if C.cuprum_ffi_context_new(&ctx) != C.CUPRUM_FFI_OK {
		fail("cuprum_ffi_context_new")
	}
	defer C.cuprum_ffi_context_free(ctx)
	const n = 65537
	const a = float32(-0.625)
	r := rand.New(rand.NewSource(7))
	x, y, out := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = r.Float32()*200 - 100
		y[i] = r.Float32()*200 - 100
		out[i] = math.Float32frombits(0x7FC00BAD) // poison
	}
	status := C.cuprum_ffi_saxpy(ctx, C.float(a), (*C.float)(&x[0]), (*C.float)(&y[0]),
		(*C.float)(&out[0]), C.size_t(n))
	if status != C.CUPRUM_FFI_OK {
		fail("cuprum_ffi_saxpy")
	}
	for i := range x {
		// float32(..) rounds the product before the sum: no fused multiply-add.
		want := float32(a*x[i]) + y[i]
		if math.Float32bits(out[i]) != math.Float32bits(want) {
			fmt.Printf("FAILED: element %d is %v, expected %v\n", i, out[i], want)
			os.Exit(1)
		}
	}
	if C.cuprum_ffi_saxpy(ctx, C.float(a), nil, (*C.float)(&y[0]), (*C.float)(&out[0]),
		C.size_t(n)) != C.CUPRUM_FFI_ERR_ARGUMENT {
		fail("a null x was not refused")
	}
	if !strings.Contains(lastError(), "null") {
		fail("no message for a null x")
	}
	fmt.Printf("PASSED: all %d elements correct (backend %s)\n", n, C.GoString(C.cuprum_ffi_backend(ctx)))
}
