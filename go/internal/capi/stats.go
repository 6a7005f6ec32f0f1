// SPDX-License-Identifier: Apache-2.0

package capi

// The Go side of stats.swg's observer trampoline.

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import "unsafe"

// StatsFields is how many values Cmr_go_ref_stats writes: the supported
// bits, then each field of cmr_stats in order.
const StatsFields = 16

// OutOfMemory is called by the observer (the package cmr sets it before it
// turns the observer on). It must not panic: a panic must not unwind
// through cmr's C frames.
var OutOfMemory func(typeName string, identity uintptr, fields [StatsFields]uint64, bytes, alignment uint64,
	stream uintptr, message string)

//export cmrGoOutOfMemory
func cmrGoOutOfMemory(typeName *C.char, identity C.uintptr_t, fields *C.uint64_t, bytes, alignment C.size_t,
	stream C.uintptr_t, message *C.char) {
	deliver := OutOfMemory
	if deliver == nil {
		return
	}
	var values [StatsFields]uint64
	copy(values[:], unsafe.Slice((*uint64)(unsafe.Pointer(fields)), StatsFields))
	deliver(C.GoString(typeName), uintptr(identity), values, uint64(bytes), uint64(alignment), uintptr(stream),
		C.GoString(message))
}
