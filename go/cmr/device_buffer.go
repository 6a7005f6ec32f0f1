// SPDX-License-Identifier: Apache-2.0

package cmr

import (
	"runtime"

	"github.com/cmr-project/cmr/go/internal/capi"
)

// DeviceBuffer is an untyped, resizable allocation from one resource,
// ordered on one stream (RMM's device_buffer). It holds a share of its
// resource, and of its stream when NewStream made it, so either may be
// closed first; Close frees the memory on the stream, then lets both go.
type DeviceBuffer struct {
	buffer capi.Struct_SS_cmr_device_buffer // nil once closed
	stream Stream                           // the stream it is ordered on
	holds  bool                             // whether it holds a share of stream
}

// newDeviceBuffer orders a buffer that create makes on stream, holding a
// share of the stream first, so that the stream cannot go under it.
func newDeviceBuffer(stream Stream, create func(*uintptr) *capi.Failure) (*DeviceBuffer, error) {
	holds := holdStream(stream)
	var handle uintptr
	if err := check(create(&handle)); err != nil {
		if holds {
			releaseStream(stream)
		}
		return nil, err
	}
	b := &DeviceBuffer{buffer: capi.SwigcptrStruct_SS_cmr_device_buffer(handle), stream: stream, holds: holds}
	// The safety net for a buffer nobody closed, as os.File has; Close is
	// still the rule (a finalizer runs at some collection, or never).
	runtime.SetFinalizer(b, (*DeviceBuffer).finalize)
	return b, nil
}

// finalize destroys a buffer nobody closed (there is nobody to report a failure to).
func (b *DeviceBuffer) finalize() {
	if b.buffer != nil {
		b.Close()
	}
}

// NewDeviceBuffer is a buffer of size uninitialised bytes from r, ordered on stream.
func NewDeviceBuffer(size uint64, stream Stream, r Resource) (*DeviceBuffer, error) {
	return NewDeviceBufferAligned(size, DefaultAlignment, stream, r)
}

// NewDeviceBufferAligned is NewDeviceBuffer with its memory aligned to
// alignment: a power of two r honours (else ErrBadAlignment or
// ErrUnsupportedAlignment, never less aligned memory), which every
// reallocation keeps; one below DefaultAlignment gets the default.
func NewDeviceBufferAligned(size, alignment uint64, stream Stream, r Resource) (*DeviceBuffer, error) {
	ref, err := refOf(r, "resource")
	if err != nil {
		return nil, err
	}
	b, err := newDeviceBuffer(stream, func(handle *uintptr) *capi.Failure {
		return capi.Cmr_device_buffer_create_aligned(size, alignment, uintptr(stream), ref, handle)
	})
	runtime.KeepAlive(r) // r's finalizer must not drop its share during the call
	return b, err
}

// NewDeviceBufferFrom is a buffer from r holding a copy of data, ordered on stream.
func NewDeviceBufferFrom(data []byte, stream Stream, r Resource) (*DeviceBuffer, error) {
	return NewDeviceBufferFromAligned(data, DefaultAlignment, stream, r)
}

// NewDeviceBufferFromAligned is NewDeviceBufferFrom aligned as
// NewDeviceBufferAligned says.
func NewDeviceBufferFromAligned(data []byte, alignment uint64, stream Stream, r Resource) (*DeviceBuffer, error) {
	ref, err := refOf(r, "resource")
	if err != nil {
		return nil, err
	}
	b, err := newDeviceBuffer(stream, func(handle *uintptr) *capi.Failure {
		return capi.Cmr_device_buffer_create_copy_aligned(data, alignment, uintptr(stream), ref, handle)
	})
	runtime.KeepAlive(r)
	if err != nil {
		return nil, err
	}
	// data is the caller's again once this returns: wait for the copy.
	if err := b.waitForStream(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *DeviceBuffer) live() error { return openUnless(b.buffer == nil, "device buffer") }

// Close frees the memory on the buffer's stream and drops its shares of
// the resource and of the stream. A second Close returns ErrDestroyedHandle.
func (b *DeviceBuffer) Close() error {
	err := closeOpen(b.live, &b.buffer, capi.Cmr_device_buffer_destroy)
	runtime.SetFinalizer(b, nil) // this and the share's release do nothing once closed
	if b.holds {
		b.holds = false
		if released := releaseStream(b.stream); err == nil {
			err = released
		}
	}
	return err
}

// orderedOn runs call, which orders the buffer on stream from then on
// (when it succeeds), moving the share the buffer holds to stream.
func (b *DeviceBuffer) orderedOn(stream Stream, call func() *capi.Failure) error {
	if err := b.live(); err != nil {
		return err
	}
	holds := holdStream(stream)
	err := check(call())
	runtime.KeepAlive(b) // b's finalizer must not destroy it during the call
	if err != nil {
		if holds {
			releaseStream(stream)
		}
		return err
	}
	previous, held := b.stream, b.holds
	b.stream, b.holds = stream, holds
	if held {
		return releaseStream(previous)
	}
	return nil
}

// Resize changes the size, keeping the first min(size, newSize) bytes;
// it reallocates only when newSize exceeds the capacity.
func (b *DeviceBuffer) Resize(newSize uint64, stream Stream) error {
	return b.orderedOn(stream, func() *capi.Failure { return capi.Cmr_device_buffer_resize(b.buffer, newSize, uintptr(stream)) })
}

// Reserve makes the capacity at least newCapacity, keeping the contents.
func (b *DeviceBuffer) Reserve(newCapacity uint64, stream Stream) error {
	return b.orderedOn(stream, func() *capi.Failure {
		return capi.Cmr_device_buffer_reserve(b.buffer, newCapacity, uintptr(stream))
	})
}

// ShrinkToFit makes the capacity equal to the size, keeping the contents.
func (b *DeviceBuffer) ShrinkToFit(stream Stream) error {
	return b.orderedOn(stream, func() *capi.Failure { return capi.Cmr_device_buffer_shrink_to_fit(b.buffer, uintptr(stream)) })
}

// SetStream orders later work, and the final free, on stream.
func (b *DeviceBuffer) SetStream(stream Stream) error {
	return b.orderedOn(stream, func() *capi.Failure { return capi.Cmr_device_buffer_set_stream(b.buffer, uintptr(stream)) })
}

// Data is the address of the memory (0 for an empty buffer).
func (b *DeviceBuffer) Data() (uintptr, error) {
	return readOpen(b.live, b.buffer, capi.Cmr_device_buffer_data)
}

// Size is the number of bytes the buffer holds.
func (b *DeviceBuffer) Size() (uint64, error) {
	return readOpen(b.live, b.buffer, capi.Cmr_device_buffer_size)
}

// Capacity is the number of bytes allocated.
func (b *DeviceBuffer) Capacity() (uint64, error) {
	return readOpen(b.live, b.buffer, capi.Cmr_device_buffer_capacity)
}

// Alignment is the alignment of the buffer's memory, which each of its
// allocations asks for (at least DefaultAlignment).
func (b *DeviceBuffer) Alignment() (uint64, error) {
	return readOpen(b.live, b.buffer, capi.Cmr_device_buffer_alignment)
}

// Stream is the stream the buffer's work is ordered on.
func (b *DeviceBuffer) Stream() (Stream, error) {
	stream, err := readOpen(b.live, b.buffer, capi.Cmr_device_buffer_stream)
	return Stream(stream), err
}

// Resource is the buffer's resource, as a value of its own type holding a
// share of its own: Close it.
func (b *DeviceBuffer) Resource() (Resource, error) {
	ref, err := readOpen(b.live, b.buffer, capi.Cmr_device_buffer_resource)
	if err != nil {
		return nil, err
	}
	return resourceOf(capi.SwigcptrCmr_resource_ref(ref))
}

// CopyToHost copies the buffer's first len(destination) bytes (at most its
// size) into destination, and waits for the copy.
func (b *DeviceBuffer) CopyToHost(destination []byte) error {
	if err := b.live(); err != nil {
		return err
	}
	err := check(capi.Cmr_device_buffer_copy_to_host(b.buffer, destination))
	runtime.KeepAlive(b)
	return err
}

// CopyFromHost copies source (at most the size) to the start of the
// buffer, and waits for the copy.
func (b *DeviceBuffer) CopyFromHost(source []byte) error {
	if err := b.live(); err != nil {
		return err
	}
	if err := check(capi.Cmr_device_buffer_copy_from(b.buffer, source)); err != nil {
		runtime.KeepAlive(b)
		return err
	}
	return b.waitForStream()
}

// Prefetch migrates managed memory to device (a negative one: the current
// device), ordered on stream; any other memory stays where it is.
func (b *DeviceBuffer) Prefetch(device int, stream Stream) error {
	if err := b.live(); err != nil {
		return err
	}
	err := check(capi.Cmr_device_buffer_prefetch(b.buffer, device, uintptr(stream)))
	runtime.KeepAlive(b)
	return err
}

// waitForStream waits for the work ordered on the buffer's stream: host
// memory given to a copy is Go's again once the call returns. (Not
// Stream.Synchronize: the stream's creator may have destroyed it already.)
func (b *DeviceBuffer) waitForStream() error {
	stream, err := b.Stream()
	if err != nil {
		return err
	}
	err = check(capi.Cmr_stream_synchronize(uintptr(stream)))
	runtime.KeepAlive(b)
	return err
}
