// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

// A small graph - a pool over counted host memory, a tracking adaptor
// over it, a statistics adaptor on top, a stream, a buffer on that stream
// from the top, the per-device entry set to the top and the value the
// table hands back for it - closed in every order (5040), each object
// twice: everything still open keeps working, everything closed reports
// an error, and at the end the pool (so everything over it) is gone, every
// byte is back and so is the stream.

const graphObjects = 7

const (
	upstreamObject = iota
	trackingObject
	topObject
	streamObject
	bufferObject
	entryObject
	currentObject
)

var bufferContents = []byte{7, 7, 7}

type graph struct {
	resources [graphObjects]cmr.Resource // the resources among the objects
	stream    cmr.Stream
	buffer    *cmr.DeviceBuffer
	open      [graphObjects]bool
}

func newGraph(t *testing.T, base cmr.Resource) *graph {
	t.Helper()
	g := &graph{}
	pool := mustPool(t, base)
	tracking, err := cmr.NewTrackingResource(pool)
	mustOK(t, err)
	top, err := cmr.NewStatisticsResource(tracking)
	mustOK(t, err)
	if g.stream, err = cmr.NewStream(); err != nil {
		t.Fatal(err)
	}
	if g.buffer, err = cmr.NewDeviceBufferFrom(bufferContents, g.stream, top); err != nil {
		t.Fatal(err)
	}
	mustOK(t, cmr.SetCurrentDeviceResource(top))
	current, err := cmr.CurrentDeviceResource()
	mustOK(t, err)
	g.resources[upstreamObject], g.resources[trackingObject], g.resources[topObject] = pool, tracking, top
	g.resources[currentObject] = current
	for i := range g.open {
		g.open[i] = true
	}
	return g
}

// close closes object i, and again: the second Close is ErrDestroyedHandle.
func (g *graph) close(t *testing.T, i int) {
	t.Helper()
	var closing func() error
	switch i {
	case streamObject:
		closing = g.stream.Destroy
	case bufferObject:
		closing = g.buffer.Close
	case entryObject:
		closing = cmr.ResetCurrentDeviceResource
	default:
		closing = g.resources[i].Close
	}
	if err := closing(); err != nil {
		t.Fatalf("closing object %d: %v", i, err)
	}
	err := closing()
	switch {
	case i == entryObject:
		if err != nil {
			t.Fatalf("resetting the table again: %v", err)
		}
	case i == streamObject && g.open[bufferObject]:
		expectStatus(t, err, cmr.ErrDestroyedHandle, "a second Destroy of a stream a buffer keeps")
	case i == streamObject:
		expectStatus(t, err, cmr.ErrInvalidArgument, "a second Destroy of a stream gone")
	default:
		expectStatus(t, err, cmr.ErrDestroyedHandle, fmt.Sprintf("a second Close of object %d", i))
	}
	g.open[i] = false
}

// use checks that everything open works and everything closed says so.
func (g *graph) use(t *testing.T) {
	t.Helper()
	for _, i := range []int{upstreamObject, trackingObject, topObject, currentObject} {
		if g.open[i] {
			roundTrip(t, g.resources[i], 300)
		} else {
			_, err := g.resources[i].Allocate(300)
			expectStatus(t, err, cmr.ErrDestroyedHandle, fmt.Sprintf("allocating from closed object %d", i))
		}
	}
	err := g.stream.Synchronize()
	switch {
	case g.open[streamObject]:
		if err != nil {
			t.Fatalf("synchronizing the stream: %v", err)
		}
	case g.open[bufferObject]:
		expectStatus(t, err, cmr.ErrDestroyedHandle, "synchronizing a destroyed stream a buffer keeps")
	default:
		expectStatus(t, err, cmr.ErrInvalidArgument, "synchronizing a destroyed stream")
	}
	if g.open[bufferObject] {
		stream, err := g.buffer.Stream()
		if err != nil || stream != g.stream {
			t.Fatalf("the buffer's stream is %#x (%v), want %#x", stream, err, g.stream)
		}
		if err := g.buffer.Resize(5000, stream); err != nil {
			t.Fatalf("resizing the buffer: %v", err)
		}
		copied := make([]byte, len(bufferContents))
		if err := g.buffer.CopyToHost(copied); err != nil || !bytes.Equal(copied, bufferContents) {
			t.Fatalf("the buffer holds %v (%v)", copied, err)
		}
		mustOK(t, g.buffer.Resize(uint64(len(bufferContents)), stream))
	} else {
		_, err := g.buffer.Size()
		expectStatus(t, err, cmr.ErrDestroyedHandle, "a closed buffer's Size")
	}
	if g.open[entryObject] && g.open[topObject] {
		current, err := cmr.CurrentDeviceResource()
		mustOK(t, err)
		if equal, err := current.IsEqual(g.resources[topObject]); err != nil || !equal {
			t.Fatalf("the table no longer holds the top (%v)", err)
		}
		mustOK(t, current.Close())
	}
}

// orders is every order of 0..n-1.
func orders(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var all [][]int
	for _, shorter := range orders(n - 1) {
		for at := 0; at <= len(shorter); at++ {
			order := append(append(append([]int{}, shorter[:at]...), n-1), shorter[at:]...)
			all = append(all, order)
		}
	}
	return all
}

func TestReleaseOrdersEveryOrder(t *testing.T) {
	base, probe := counted(t)
	defer cmr.ResetCurrentDeviceResource()
	streams := cmr.LiveStreams()
	all := orders(graphObjects)
	if len(all) != 5040 {
		t.Fatalf("%d orders, want 5040", len(all))
	}
	for _, order := range all {
		g := newGraph(t, base)
		g.use(t)
		for _, i := range order {
			g.close(t, i)
			g.use(t)
		}
		gotBytes, err := probe.BytesCurrent()
		if err != nil || gotBytes != 0 {
			t.Fatalf("order %v left %d bytes taken (%v): a share leaked", order, gotBytes, err)
		}
		if live := cmr.LiveStreams(); live != streams {
			t.Fatalf("order %v left %d streams, want %d", order, live, streams)
		}
	}
}

// A buffer keeps its stream: destroying the stream first leaves the buffer
// working, and the stream goes with the last buffer ordered on it.
func TestReleaseOrdersBufferKeepsItsStream(t *testing.T) {
	streams := cmr.LiveStreams()
	stream, err := cmr.NewStream()
	mustOK(t, err)
	system := mustSystem(t)
	first, err := cmr.NewDeviceBufferFrom([]byte{1, 2}, stream, system)
	mustOK(t, err)
	second, err := cmr.NewDeviceBuffer(10, stream, system)
	mustOK(t, err)
	mustOK(t, stream.Destroy())
	if live := cmr.LiveStreams(); live != streams+1 {
		t.Fatalf("%d streams live, want %d: the stream went while buffers are ordered on it", live, streams+1)
	}
	mustOK(t, first.Resize(4000, stream))
	mustOK(t, first.SetStream(cmr.DefaultStream))
	mustOK(t, second.Close())
	if live := cmr.LiveStreams(); live != streams {
		t.Fatalf("%d streams live, want %d: the stream outlived the last buffer ordered on it", live, streams)
	}
	err = stream.Synchronize()
	if !errors.Is(err, cmr.ErrInvalidArgument) {
		t.Fatalf("synchronizing a stream gone: %v", err)
	}
	mustOK(t, first.Close())
}
