// SPDX-License-Identifier: Apache-2.0

// Package capi is cmr's C API as SWIG's Go module makes it
// (capi_swig.go and capi_swig_wrap.c, SWIG's output, committed), with the
// conventions of swig/cmr_go.swg; the package cmr is written over it.
package capi

// The Go side of callbacks.swg: the functions its C trampolines call, each
// finding the Go functions through the runtime/cgo.Handle that is the
// callbacks' argument. A handle is valid while the Go value that made the
// resource is open: a call from C after that (from an adaptor still
// holding the resource) finds none and fails, rather than calling freed
// functions (cgo.Handle values are never reused, so a deleted one stays
// invalid).
//
// A panic must not unwind through cmr's C frames: it is recovered here and
// counts as a failed allocation (or no retry) inside C; the value goes, as
// a cgo.Handle of its own, into the calling thread's pending-panic slot of
// callbacks.swg, and the SWIG wrapper of the cmr call that ran the
// callback raises it again in Go once that call has returned
// (cmr_go.swg's newFailure). The first panic of a call wins.

/*
// The package's C code (callbacks.swg's trampolines and the rest of the
// SWIG wrapper, capi_swig_wrap.c) compiles against an installed libcmr,
// found through its cmr.pc.
#cgo pkg-config: cmr
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import "runtime/cgo"

// Callbacks are the Go functions behind a callback resource (Allocate,
// Deallocate) or a failure callback adaptor (Retry).
type Callbacks struct {
	Allocate   func(bytes uint64, stream uintptr) uintptr
	Deallocate func(address uintptr, bytes uint64, stream uintptr)
	Retry      func(bytes uint64) bool
}

// Register makes c callable from C under the id it returns (never 0).
func Register(c *Callbacks) uintptr { return uintptr(cgo.NewHandle(c)) }

// Unregister makes the id call nothing any more.
func Unregister(id uintptr) { cgo.Handle(id).Delete() }

// callbacksOf is the Callbacks registered under id, or nil once the id is
// unregistered (Value panics for a deleted handle).
func callbacksOf(id C.uintptr_t) (c *Callbacks) {
	defer func() {
		if recover() != nil {
			c = nil
		}
	}()
	return cgo.Handle(id).Value().(*Callbacks)
}

// keepPanic is deferred by each exported function: it recovers a panic of
// the Go function and, unless an earlier callback of the same call
// panicked, leaves its value in the thread's pending slot.
func keepPanic(pending *C.uintptr_t) {
	if value := recover(); value != nil && *pending == 0 {
		*pending = C.uintptr_t(cgo.NewHandle(value))
	}
}

// raisePanic raises again the panic a callback recovered during the call
// that has just returned (its cgo.Handle, from the pending slot).
func raisePanic(handle uintptr) {
	value := cgo.Handle(handle).Value()
	cgo.Handle(handle).Delete()
	panic(value)
}

//export cmrGoAllocate
func cmrGoAllocate(bytes C.size_t, stream, id C.uintptr_t, pending *C.uintptr_t) (address C.uintptr_t) {
	c := callbacksOf(id)
	if c == nil {
		return 0
	}
	defer keepPanic(pending)
	return C.uintptr_t(c.Allocate(uint64(bytes), uintptr(stream)))
}

//export cmrGoDeallocate
func cmrGoDeallocate(address C.uintptr_t, bytes C.size_t, stream, id C.uintptr_t, pending *C.uintptr_t) {
	c := callbacksOf(id)
	if c == nil {
		return
	}
	defer keepPanic(pending)
	c.Deallocate(uintptr(address), uint64(bytes), uintptr(stream))
}

//export cmrGoRetry
func cmrGoRetry(bytes C.size_t, id C.uintptr_t, pending *C.uintptr_t) (retry C.bool) {
	c := callbacksOf(id)
	if c == nil {
		return false
	}
	defer keepPanic(pending)
	return C.bool(c.Retry(uint64(bytes)))
}
