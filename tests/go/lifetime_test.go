// SPDX-License-Identifier: Apache-2.0
package cmr_test

import (
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

// Closing the upstream's value first leaves the adaptor working: it holds
// a share of its own, and gives everything back when it goes.
func TestLifetimeUpstreamClosedBeforeAdaptor(t *testing.T) {
	base, probe := counted(t)
	pool := mustPool(t, base)
	statistics, err := cmr.NewStatisticsResource(pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []cmr.Resource{base, pool} {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	address, err := statistics.Allocate(1000)
	if err != nil {
		t.Fatalf("allocating over closed upstream values: %v", err)
	}
	expectOutstanding(t, probe, MiB, 1)
	if err := statistics.Deallocate(address, 1000); err != nil {
		t.Fatal(err)
	}
	if err := statistics.Close(); err != nil {
		t.Fatal(err)
	}
	expectOutstanding(t, probe, 0, 0)
}

func TestLifetimeAdaptorClosedBeforeUpstream(t *testing.T) {
	base, probe := counted(t)
	pool := mustPool(t, base)
	tracking, err := cmr.NewTrackingResource(pool)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, tracking, 1000)
	if err := tracking.Close(); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, pool, 1000)
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	expectOutstanding(t, probe, 0, 0)
}

// A buffer holds its resource: closing the resource's value first is safe,
// and the buffer's Close gives the memory back.
func TestLifetimeBufferOutlivesResource(t *testing.T) {
	base, probe := counted(t)
	pool := mustPool(t, base)
	buffer, err := cmr.NewDeviceBufferFrom([]byte("cmr from go"), cmr.DefaultStream, pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	copied := make([]byte, 11)
	if err := buffer.CopyToHost(copied); err != nil || string(copied) != "cmr from go" {
		t.Fatalf("copied back %q (%v)", copied, err)
	}
	if err := buffer.Close(); err != nil {
		t.Fatal(err)
	}
	expectOutstanding(t, probe, 0, 0)
}

// The per-device table holds a share of what it stores, and a value read
// from it holds one of its own, valid after the table is reset.
func TestLifetimePerDeviceTable(t *testing.T) {
	base, probe := counted(t)
	pool := mustPool(t, base)
	defer pool.Close()
	if err := cmr.SetCurrentDeviceResource(pool); err != nil {
		t.Fatal(err)
	}
	defer cmr.ResetCurrentDeviceResource()
	current, err := cmr.CurrentDeviceResource()
	if err != nil {
		t.Fatal(err)
	}
	if _, isPool := current.(*cmr.PoolResource); !isPool {
		t.Fatalf("the current device resource is a %T, want a *cmr.PoolResource", current)
	}
	if equal, err := current.IsEqual(pool); err != nil || !equal {
		t.Fatalf("the current device resource is not the pool set (%v)", err)
	}
	if err := cmr.ResetCurrentDeviceResource(); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, current, 1000)
	if err := current.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	expectOutstanding(t, probe, 0, 0)
}

// Close twice, and every call after Close, is ErrDestroyedHandle; nothing crashes.
func TestLifetimeUseAfterClose(t *testing.T) {
	pool := mustPool(t, mustSystem(t))
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	expectStatus(t, pool.Close(), cmr.ErrDestroyedHandle, "a second Close")
	_, err := pool.Allocate(1000)
	expectStatus(t, err, cmr.ErrDestroyedHandle, "Allocate after Close")
	_, err = pool.PoolSize()
	expectStatus(t, err, cmr.ErrDestroyedHandle, "PoolSize after Close")
	_, err = cmr.NewStatisticsResource(pool)
	expectStatus(t, err, cmr.ErrDestroyedHandle, "a closed upstream")
	_, err = cmr.NewDeviceBuffer(16, cmr.DefaultStream, pool)
	expectStatus(t, err, cmr.ErrDestroyedHandle, "a buffer over a closed resource")

	stack, err := cmr.ParseStack("pool(system, initial_pool_size=1MiB)")
	if err != nil {
		t.Fatal(err)
	}
	if err := stack.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = stack.Expression()
	expectStatus(t, err, cmr.ErrDestroyedHandle, "Expression after Close")

	buffer, err := cmr.NewDeviceBuffer(16, cmr.DefaultStream, mustSystem(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := buffer.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = buffer.Size()
	expectStatus(t, err, cmr.ErrDestroyedHandle, "a closed buffer's Size")
}
