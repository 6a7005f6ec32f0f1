// SPDX-License-Identifier: Apache-2.0

package capi

// The Go side of callbacks.swg: the functions its C trampolines
// call, each finding the Go functions by the id that is the callbacks'
// argument. Ids are registered while the Go value that made the resource
// is open: a call from C after that (from an adaptor still holding the
// resource) finds none and fails, rather than calling freed functions. A
// panic must not unwind through cmr's C frames: it is recovered here and
// counts as a failed allocation (or no retry); Panicked keeps the first.

/*
// The package's C code (callbacks.swg's trampolines and the wrapper SWIG
// makes from capi.swig when the go tool builds the package) compiles
// against an installed libcmr, found through its cmr.pc.
#cgo pkg-config: cmr
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import "sync"

// Callbacks are the Go functions behind a callback resource (Allocate,
// Deallocate) or a failure callback adaptor (Retry).
type Callbacks struct {
	Allocate   func(bytes uint64, stream uintptr) uintptr
	Deallocate func(address uintptr, bytes uint64, stream uintptr)
	Retry      func(bytes uint64) bool

	mutex    sync.Mutex
	panicked any
}

// Panicked is the value of the first panic a callback raised, or nil.
func (c *Callbacks) Panicked() any {
	c.mutex.Lock()
	defer c.mutex.Unlock()
	return c.panicked
}

func (c *Callbacks) recoverPanic() {
	if value := recover(); value != nil {
		c.mutex.Lock()
		if c.panicked == nil {
			c.panicked = value
		}
		c.mutex.Unlock()
	}
}

var registry struct {
	sync.RWMutex
	next      uintptr
	callbacks map[uintptr]*Callbacks
}

// Register makes c callable from C under the id it returns (never 0).
func Register(c *Callbacks) uintptr {
	registry.Lock()
	defer registry.Unlock()
	if registry.callbacks == nil {
		registry.callbacks = make(map[uintptr]*Callbacks)
	}
	registry.next++
	registry.callbacks[registry.next] = c
	return registry.next
}

// Unregister makes the id call nothing any more.
func Unregister(id uintptr) {
	registry.Lock()
	defer registry.Unlock()
	delete(registry.callbacks, id)
}

func callbacksOf(id C.uintptr_t) *Callbacks {
	registry.RLock()
	defer registry.RUnlock()
	return registry.callbacks[uintptr(id)]
}

//export cmrGoAllocate
func cmrGoAllocate(bytes C.size_t, stream, id C.uintptr_t) (address C.uintptr_t) {
	c := callbacksOf(id)
	if c == nil {
		return 0
	}
	defer c.recoverPanic()
	return C.uintptr_t(c.Allocate(uint64(bytes), uintptr(stream)))
}

//export cmrGoDeallocate
func cmrGoDeallocate(address C.uintptr_t, bytes C.size_t, stream, id C.uintptr_t) {
	c := callbacksOf(id)
	if c == nil {
		return
	}
	defer c.recoverPanic()
	c.Deallocate(uintptr(address), uint64(bytes), uintptr(stream))
}

//export cmrGoRetry
func cmrGoRetry(bytes C.size_t, id C.uintptr_t) (retry C.bool) {
	c := callbacksOf(id)
	if c == nil {
		return false
	}
	defer c.recoverPanic()
	return C.bool(c.Retry(uint64(bytes)))
}
