// SPDX-License-Identifier: Apache-2.0

// Package cmr is the Go binding of cmr, a library of GPU memory resources
// in the spirit of RAPIDS Memory Manager: memory resources (one type per
// resource of cmr's spec), stacks of them written as text, device buffers
// and the per-device resource table.
//
// Every value that holds C memory has a Close method, and nothing relies
// on finalizers: close what you make. Failures are *Error values wrapping
// a Status, which is also a sentinel: errors.Is(err, cmr.ErrOutOfMemory).
package cmr

import "github.com/cmr-project/cmr/go/internal/capi"

// Version is the library's version, "MAJOR.MINOR.PATCH".
func Version() string { return capi.Cmr_version() }

// BuiltWithCUDA tells a CUDA build (true) from the host build (false).
func BuiltWithCUDA() bool { return capi.Cmr_built_with_cuda() }

// DeviceCount is the number of devices (1 in the host build, host memory).
func DeviceCount() (int, error) {
	var count int32
	err := check(capi.Cmr_device_count(&count))
	return int(count), err
}

// CurrentDevice is the calling thread's current device.
func CurrentDevice() (int, error) {
	var device int32
	err := check(capi.Cmr_current_device(&device))
	return int(device), err
}

// SetCurrentDevice sets the calling thread's current device.
func SetCurrentDevice(device int) error { return check(capi.Cmr_set_current_device(device)) }

// DeviceMemoryInfo is the free and total memory of the current device.
func DeviceMemoryInfo() (free, total uint64, err error) {
	err = check(capi.Cmr_device_memory_info(&free, &total))
	return free, total, err
}

// ParseSize is the number of bytes text writes, by cmr's one size grammar
// (cmr/stack.h, spec/README.md): e.g. "4096", "1.5GiB", "512 mb", "80%" (of
// the current device's free memory). A text outside the grammar is
// ErrInvalidArgument, one of more than 2^64-1 bytes ErrSizeOverflow.
func ParseSize(text string) (uint64, error) {
	if err := checkText(text, "text"); err != nil {
		return 0, err
	}
	var bytes uint64
	err := check(capi.Cmr_parse_size(text, &bytes))
	return bytes, err
}
