// SPDX-License-Identifier: Apache-2.0

package cmr

import "github.com/cmr-project/cmr/go/internal/capi"

// StreamFlags say how a stream orders its work against the default stream.
type StreamFlags uint

const (
	StreamSyncDefault StreamFlags = StreamFlags(capi.CMR_STREAM_FLAGS_SYNC_DEFAULT) // RMM's sync_default
	StreamNonBlocking StreamFlags = StreamFlags(capi.CMR_STREAM_FLAGS_NON_BLOCKING) // cudaStreamNonBlocking
)

// DefaultStreamPoolSize is RMM's default number of streams in a pool.
const DefaultStreamPoolSize = 16

// StreamPool is a pool of streams handed out round robin, as RMM's
// cuda_stream_pool. Its streams belong to it and are destroyed by Close:
// use them only while the pool is open, and do not Destroy them. It has no
// finalizer: a Stream is a plain handle that does not keep the pool
// reachable, so collecting an unclosed pool would destroy streams still in
// use. Close it.
type StreamPool struct {
	pool capi.Struct_SS_cmr_stream_pool // nil once closed
}

// NewStreamPool makes size streams (0: DefaultStreamPoolSize) with flags.
func NewStreamPool(size uint64, flags StreamFlags) (*StreamPool, error) {
	var handle uintptr
	if err := check(capi.Cmr_stream_pool_create(size, uint(flags), &handle)); err != nil {
		return nil, err
	}
	return &StreamPool{pool: capi.SwigcptrStruct_SS_cmr_stream_pool(handle)}, nil
}

func (p *StreamPool) live() error { return openUnless(p.pool == nil, "stream pool") }

// Close destroys the pool and its streams. A second Close returns ErrDestroyedHandle.
func (p *StreamPool) Close() error {
	return closeOpen(p.live, &p.pool, capi.Cmr_stream_pool_destroy)
}

// Stream is the next stream, round robin (safe from many goroutines).
func (p *StreamPool) Stream() (Stream, error) {
	stream, err := readOpen(p.live, p.pool, capi.Cmr_stream_pool_get_stream)
	return Stream(stream), err
}

// StreamAt is the stream at index modulo the pool's size.
func (p *StreamPool) StreamAt(index uint64) (Stream, error) {
	if err := p.live(); err != nil {
		return 0, err
	}
	var stream uintptr
	err := check(capi.Cmr_stream_pool_get_stream_at(p.pool, index, &stream))
	return Stream(stream), err
}

// Size is how many streams the pool holds.
func (p *StreamPool) Size() (uint64, error) {
	return readOpen(p.live, p.pool, capi.Cmr_stream_pool_size)
}
