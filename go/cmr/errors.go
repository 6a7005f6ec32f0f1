// SPDX-License-Identifier: Apache-2.0

package cmr

import (
	"fmt"
	"runtime"

	"github.com/cmr-project/cmr/go/internal/capi"
)

// Status is a cmr_status other than success. Each one is also a sentinel
// error (ErrOutOfMemory, ErrInvalidArgument, ...) that the errors cmr
// returns wrap, so that errors.Is(err, cmr.ErrOutOfMemory) tells them apart.
type Status int

// The statuses of cmr/core.h, as sentinel errors.
const (
	ErrInvalidArgument      Status = 1  // a value outside what the call accepts
	ErrNullPointer          Status = 2  // a required pointer was missing
	ErrInvalidRef           Status = 3  // a resource that was never made (a zero value)
	ErrDestroyedHandle      Status = 4  // a resource, stack or buffer used after Close
	ErrBadAlignment         Status = 5  // an alignment that is zero or not a power of two
	ErrUnsupportedAlignment Status = 6  // a valid alignment the resource cannot honour
	ErrSizeOverflow         Status = 7  // a size that overflows once rounded or added
	ErrOutOfMemory          Status = 8  // the resource cannot serve the request
	ErrUnknownDevice        Status = 9  // a device id outside [0, device count)
	ErrNoDevice             Status = 10 // no CUDA driver or no CUDA device
	ErrCUDA                 Status = 11 // another CUDA error; the message names it
	ErrUnsupported          Status = 12 // not available in this build or on this device
	ErrPropertyMissing      Status = 13 // the resource lacks a property the call requires
	ErrUnknownPointer       Status = 14 // a pointer the resource did not hand out
	ErrInternal             Status = 15 // a broken invariant inside cmr (a bug: please report)
	ErrIO                   Status = 16 // a file could not be written or flushed (a full disk); the message says why
	ErrReentrantCall        Status = 17 // a resource called from inside its own upstream's call, where that would deadlock
	ErrForked               Status = 18 // in a forked child: a resource, buffer or stream the parent made
	ErrStreamCapture        Status = 19 // refused on a stream capturing a CUDA graph
	ErrIpcSameProcess       Status = 20 // shared memory imported into the very process that exported it
	ErrIpcGone              Status = 21 // what an IPC descriptor names is gone: freed, or its pool destroyed, by the exporter
)

// String is cmr's fixed name of the status, e.g. "CMR_ERROR_OUT_OF_MEMORY".
func (s Status) String() string { return capi.Cmr_status_string(int(s)) }

// Error makes a Status usable as a sentinel error.
func (s Status) Error() string { return s.String() }

// Error is what every failed cmr call returns: the status and cmr's
// message saying what was wrong. It wraps its Status.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Status.String()
	}
	return e.Status.String() + ": " + e.Message
}

// Unwrap gives the status, so that errors.Is matches the sentinels.
func (e *Error) Unwrap() error { return e.Status }

// check turns the outcome of a capi call into an error (nil on success).
func check(failure *capi.Failure) error {
	if failure == nil {
		return nil
	}
	return &Error{Status: Status(failure.Status), Message: failure.Message}
}

// openUnless is nil for an open handle, else the ErrDestroyedHandle a call
// on the closed one (named by what) returns.
func openUnless(closed bool, what string) error {
	if closed {
		return errorf(ErrDestroyedHandle, "the %s is closed", what)
	}
	return nil
}

// readOpen returns what get writes for handle, once live says the handle
// is open (else live's error and T's zero value).
func readOpen[H, T any](live func() error, handle H, get func(H, *T) *capi.Failure) (T, error) {
	var value T
	if err := live(); err != nil {
		return value, err
	}
	err := check(get(handle, &value))
	runtime.KeepAlive(live) // live is a method value: it holds the value whose finalizer must wait
	return value, err
}

// closeOpen destroys *handle and sets it to H's zero value (what live
// takes for closed), once live says the handle is open; else it returns
// live's error, so that a second close reports ErrDestroyedHandle.
func closeOpen[H any](live func() error, handle *H, destroy func(H) *capi.Failure) error {
	if err := live(); err != nil {
		return err
	}
	err := check(destroy(*handle))
	var closed H
	*handle = closed
	return err
}

// errorf is an error found on the Go side, before any C call.
func errorf(status Status, format string, args ...any) error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}
