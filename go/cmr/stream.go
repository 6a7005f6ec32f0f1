// SPDX-License-Identifier: Apache-2.0

package cmr

import (
	"sync"

	"github.com/cmr-project/cmr/go/internal/capi"
)

// Stream is a cudaStream_t in CUDA builds, passed as its address; in the
// host build an opaque token whose work is always complete.
//
// A DeviceBuffer ordered on a stream NewStream made holds a share of it,
// as RMM's buffer keeps its stream: Destroy gives back the creator's share,
// and the stream itself is destroyed when the last buffer ordered on it
// lets it go, whichever goes first.
type Stream uintptr

// DefaultStream is the default (legacy) stream.
const DefaultStream Stream = 0

// streamShares are the shares held of a stream NewStream made.
type streamShares struct {
	created bool // the creator's, until Destroy
	buffers int  // one per DeviceBuffer ordered on it
}

// streams: the streams NewStream made and cmr has not destroyed yet.
var streams = struct {
	sync.Mutex
	shares map[Stream]*streamShares
}{shares: map[Stream]*streamShares{}}

// NewStream creates a stream; Destroy it when done.
func NewStream() (Stream, error) {
	var stream uintptr
	if err := check(capi.Cmr_stream_create(&stream)); err != nil {
		return 0, err
	}
	streams.Lock()
	streams.shares[Stream(stream)] = &streamShares{created: true}
	streams.Unlock()
	return Stream(stream), nil
}

// Destroy destroys a stream made by NewStream, at once or, while
// DeviceBuffers are ordered on it, once the last of them lets it go. A
// second Destroy, and a Synchronize after it, return ErrDestroyedHandle
// while a buffer keeps the stream (cmr's error once it is gone). Any
// other stream goes to cmr_stream_destroy as it is.
func (s Stream) Destroy() error {
	streams.Lock()
	shares, ours := streams.shares[s]
	if ours {
		if !shares.created {
			streams.Unlock()
			return s.destroyedError()
		}
		shares.created = false
		if shares.buffers > 0 {
			streams.Unlock()
			return nil
		}
		delete(streams.shares, s)
	}
	streams.Unlock()
	return check(capi.Cmr_stream_destroy(uintptr(s)))
}

// Synchronize waits for the work ordered on the stream.
func (s Stream) Synchronize() error {
	streams.Lock()
	shares, ours := streams.shares[s]
	destroyed := ours && !shares.created
	streams.Unlock()
	if destroyed {
		return s.destroyedError()
	}
	return check(capi.Cmr_stream_synchronize(uintptr(s)))
}

func (s Stream) destroyedError() error {
	return errorf(ErrDestroyedHandle, "stream %#x was destroyed (a DeviceBuffer ordered on it still keeps it)", uintptr(s))
}

// holdStream takes a share of s for a buffer ordered on it, if NewStream
// made it (any other stream is not ours to keep): whether it took one.
func holdStream(s Stream) bool {
	streams.Lock()
	defer streams.Unlock()
	shares, ours := streams.shares[s]
	if ours {
		shares.buffers++
	}
	return ours
}

// releaseStream drops a buffer's share of s, destroying s with the last.
func releaseStream(s Stream) error {
	streams.Lock()
	shares := streams.shares[s]
	shares.buffers--
	if shares.buffers > 0 || shares.created {
		streams.Unlock()
		return nil
	}
	delete(streams.shares, s)
	streams.Unlock()
	return check(capi.Cmr_stream_destroy(uintptr(s)))
}

// LiveStreams is how many streams NewStream made are not destroyed yet
// (not destroyed by Destroy, or kept by a DeviceBuffer).
func LiveStreams() int {
	streams.Lock()
	defer streams.Unlock()
	return len(streams.shares)
}
