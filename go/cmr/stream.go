package cmr

import "cmr/internal/capi"

// Stream is a cudaStream_t in CUDA builds, passed as its address; in the
// host build an opaque token whose work is always complete.
type Stream uintptr

// DefaultStream is the default (legacy) stream.
const DefaultStream Stream = 0

// NewStream creates a stream; Destroy it when done.
func NewStream() (Stream, error) {
	var stream uintptr
	err := check(capi.Cmr_stream_create(&stream))
	return Stream(stream), err
}

// Destroy destroys a stream made by NewStream.
func (s Stream) Destroy() error { return check(capi.Cmr_stream_destroy(uintptr(s))) }

// Synchronize waits for the work ordered on the stream.
func (s Stream) Synchronize() error { return check(capi.Cmr_stream_synchronize(uintptr(s))) }
