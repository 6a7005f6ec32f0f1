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
	mustOK(t, err)
	for _, r := range []cmr.Resource{base, pool} {
		mustOK(t, r.Close())
	}
	address, err := statistics.Allocate(1000)
	if err != nil {
		t.Fatalf("allocating over closed upstream values: %v", err)
	}
	expectOutstanding(t, probe, MiB, 1)
	mustOK(t, statistics.Deallocate(address, 1000))
	mustOK(t, statistics.Close())
	expectOutstanding(t, probe, 0, 0)
}

func TestLifetimeAdaptorClosedBeforeUpstream(t *testing.T) {
	base, probe := counted(t)
	pool := mustPool(t, base)
	tracking, err := cmr.NewTrackingResource(pool)
	mustOK(t, err)
	roundTrip(t, tracking, 1000)
	mustOK(t, tracking.Close())
	roundTrip(t, pool, 1000)
	mustOK(t, pool.Close())
	expectOutstanding(t, probe, 0, 0)
}

// A buffer holds its resource: closing the resource's value first is safe,
// and the buffer's Close gives the memory back.
func TestLifetimeBufferOutlivesResource(t *testing.T) {
	base, probe := counted(t)
	pool := mustPool(t, base)
	buffer, err := cmr.NewDeviceBufferFrom([]byte("cmr from go"), cmr.DefaultStream, pool)
	mustOK(t, err)
	mustOK(t, pool.Close())
	copied := make([]byte, 11)
	if err := buffer.CopyToHost(copied); err != nil || string(copied) != "cmr from go" {
		t.Fatalf("copied back %q (%v)", copied, err)
	}
	mustOK(t, buffer.Close())
	expectOutstanding(t, probe, 0, 0)
}

// The per-device table holds a share of what it stores, and a value read
// from it holds one of its own, valid after the table is reset.
func TestLifetimePerDeviceTable(t *testing.T) {
	base, probe := counted(t)
	pool := mustPool(t, base)
	defer pool.Close()
	mustOK(t, cmr.SetCurrentDeviceResource(pool))
	defer cmr.ResetCurrentDeviceResource()
	current, err := cmr.CurrentDeviceResource()
	mustOK(t, err)
	if _, isPool := current.(*cmr.PoolResource); !isPool {
		t.Fatalf("the current device resource is a %T, want a *cmr.PoolResource", current)
	}
	if equal, err := current.IsEqual(pool); err != nil || !equal {
		t.Fatalf("the current device resource is not the pool set (%v)", err)
	}
	mustOK(t, cmr.ResetCurrentDeviceResource())
	roundTrip(t, current, 1000)
	mustOK(t, current.Close())
	mustOK(t, pool.Close())
	expectOutstanding(t, probe, 0, 0)
}

// Close twice, and every call after Close, is ErrDestroyedHandle; nothing crashes.
func TestLifetimeUseAfterClose(t *testing.T) {
	pool := mustPool(t, mustSystem(t))
	mustOK(t, pool.Close())
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
	mustOK(t, err)
	mustOK(t, stack.Close())
	_, err = stack.Expression()
	expectStatus(t, err, cmr.ErrDestroyedHandle, "Expression after Close")

	buffer, err := cmr.NewDeviceBuffer(16, cmr.DefaultStream, mustSystem(t))
	mustOK(t, err)
	mustOK(t, buffer.Close())
	_, err = buffer.Size()
	expectStatus(t, err, cmr.ErrDestroyedHandle, "a closed buffer's Size")
}
