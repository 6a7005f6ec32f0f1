// SPDX-License-Identifier: Apache-2.0

package cmr_test

import "unsafe"

// Host memory from a resource (the host build's memory is host memory),
// seen as bytes.

func bytesAt(address uintptr, length uint64) []byte {
	// The address is C memory, which the Go collector never moves or frees:
	// read as a pointer through its variable, as vet's check of
	// uintptr-to-pointer conversions is about Go memory.
	pointer := *(*unsafe.Pointer)(unsafe.Pointer(&address))
	return unsafe.Slice((*byte)(pointer), length)
}

func fill(address uintptr, length uint64, value byte) {
	memory := bytesAt(address, length)
	for i := range memory {
		memory[i] = value
	}
}

// holds tells whether every byte at address is value.
func holds(address uintptr, length uint64, value byte) bool {
	for _, b := range bytesAt(address, length) {
		if b != value {
			return false
		}
	}
	return true
}
