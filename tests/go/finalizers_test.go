// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"runtime"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

// collectUntil runs garbage collections (and lets the finalizer goroutine
// run) until released says the finalizers did their work, a bounded number
// of times; it fails the test when they never did.
func collectUntil(t *testing.T, what string, released func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		runtime.GC()
		runtime.Gosched()
		if released() {
			return
		}
	}
	t.Fatalf("%s: nothing was released after 200 collections", what)
}

func outstanding(probe *cmr.StatisticsResource) uint64 {
	allocations, err := probe.AllocationsCurrent()
	if err != nil {
		return ^uint64(0)
	}
	return allocations
}

// A resource, a stack and a device buffer nobody closed are released by
// their finalizers, as os.File's closes a file: the pool's chunk and the
// buffer's memory go back to the upstream. (Close is still the rule.)
func TestFinalizersReleaseWhatNobodyClosed(t *testing.T) {
	upstream, probe := counted(t)
	func() {
		pool, err := cmr.NewPoolResource(upstream, cmr.WithInitialPoolSize(MiB))
		mustOK(t, err)
		buffer, err := cmr.NewDeviceBuffer(1000, cmr.DefaultStream, upstream)
		mustOK(t, err)
		_, _ = pool, buffer // neither closed
	}()
	expectOutstanding(t, probe, MiB+1000, 2)
	collectUntil(t, "an unclosed pool and buffer", func() bool { return outstanding(probe) == 0 })
}

// A closed value has no finalizer left to run: closing it and collecting
// it drops its share once (a second drop would take the upstream's share
// that the adaptor holds, and the probe would then fail).
func TestFinalizersDoNotRunAfterClose(t *testing.T) {
	upstream, probe := counted(t)
	func() {
		adaptor, err := cmr.NewStatisticsResource(upstream)
		mustOK(t, err)
		mustOK(t, adaptor.Close())
	}()
	for i := 0; i < 10; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	roundTrip(t, upstream, 1000)
	expectOutstanding(t, probe, 0, 0)
}
