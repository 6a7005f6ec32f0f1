// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

const mib = 1 << 20

func newPool(t *testing.T) (*cmr.SystemResource, *cmr.PoolResource) {
	t.Helper()
	system, err := cmr.NewSystemResource()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := cmr.NewPoolResource(system, cmr.WithInitialPoolSize(mib), cmr.WithMaximumPoolSize(mib))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pool.Close(); err != nil {
			t.Error(err)
		}
		if err := system.Close(); err != nil {
			t.Error(err)
		}
	})
	return system, pool
}

func statsOf(t *testing.T, r cmr.Resource) cmr.Stats {
	t.Helper()
	stats, err := cmr.StatsOf(r)
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

func TestStatsOfAPool(t *testing.T) {
	_, pool := newPool(t)
	a, err := pool.Allocate(1000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pool.Allocate(3000)
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Deallocate(a, 1000); err != nil {
		t.Fatal(err)
	}
	stats := statsOf(t, pool)
	want := cmr.Stats{Supported: stats.Supported, BytesInUse: 3000, BytesInUsePeak: 4000, BytesHeld: mib,
		BytesHeldPeak: mib, Allocations: 2, Deallocations: 1, BytesFree: mib - 3072, FreeBlocks: 2,
		LargestFreeBlock: mib - 4096, Segments: 1, StreamLists: 1}
	if stats != want {
		t.Fatalf("stats %+v, want %+v", stats, want)
	}
	if !stats.Has(cmr.StatsLargestFreeBlock) || stats.Has(cmr.StatsPoolBytesUsed) {
		t.Fatalf("supported %#x", stats.Supported)
	}
	if err := cmr.ResetPeakStats(pool); err != nil {
		t.Fatal(err)
	}
	if peak := statsOf(t, pool).BytesInUsePeak; peak != 3000 {
		t.Fatalf("peak after the reset %d, want 3000", peak)
	}
	if err := pool.Deallocate(b, 3000); err != nil {
		t.Fatal(err)
	}
}

func TestStatsOfAClosedResourceFails(t *testing.T) {
	system, err := cmr.NewSystemResource()
	if err != nil {
		t.Fatal(err)
	}
	if err := system.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cmr.StatsOf(system); !errors.Is(err, cmr.ErrDestroyedHandle) {
		t.Fatalf("StatsOf a closed resource: %v", err)
	}
}

func TestTheOutOfMemoryObserver(t *testing.T) {
	_, pool := newPool(t)
	counted, err := cmr.NewStatisticsResource(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer counted.Close()
	var events []cmr.OutOfMemoryEvent
	var nested error
	if err := cmr.SetOutOfMemoryObserver(func(event cmr.OutOfMemoryEvent) {
		events = append(events, event)
		nested = cmr.SetOutOfMemoryObserver(nil)
	}); err != nil {
		t.Fatal(err)
	}
	_, err = counted.Allocate(2 * mib)
	if !errors.Is(err, cmr.ErrOutOfMemory) {
		t.Fatalf("allocating past the pool's maximum: %v", err)
	}
	if err := cmr.SetOutOfMemoryObserver(nil); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Fatalf("%d events, want 1", len(events))
	}
	event := events[0]
	if !event.IsFrom(pool) || event.IsFrom(counted) || event.ResourceType != "pool" || event.Bytes != 2*mib {
		t.Fatalf("event %+v", event)
	}
	if event.Stats.BytesHeld != mib || !strings.Contains(event.Message, "free by stream") ||
		!strings.Contains(err.Error(), event.Message) {
		t.Fatalf("event %+v for error %v", event, err)
	}
	if !errors.Is(nested, cmr.ErrReentrantCall) {
		t.Fatalf("setting the observer from inside it: %v", nested)
	}
	if _, err := counted.Allocate(2 * mib); !errors.Is(err, cmr.ErrOutOfMemory) || len(events) != 1 {
		t.Fatalf("with no observer: %v, %d events", err, len(events))
	}
}

func TestAPanicInTheObserverIsKept(t *testing.T) {
	_, pool := newPool(t)
	if err := cmr.SetOutOfMemoryObserver(func(cmr.OutOfMemoryEvent) { panic("the observer broke") }); err != nil {
		t.Fatal(err)
	}
	defer cmr.SetOutOfMemoryObserver(nil)
	if _, err := pool.Allocate(2 * mib); !errors.Is(err, cmr.ErrOutOfMemory) {
		t.Fatalf("allocating past the pool's maximum: %v", err)
	}
	if panicked := cmr.ObserverPanic(); panicked != "the observer broke" {
		t.Fatalf("ObserverPanic() = %v", panicked)
	}
}
