// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"errors"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

// mustSystem is a system resource closed when the test ends.
func mustSystem(t *testing.T) *cmr.SystemResource {
	t.Helper()
	system, err := cmr.NewSystemResource()
	mustOK(t, err)
	t.Cleanup(func() { system.Close() })
	return system
}

// mustOK fails the test at once when err is not nil.
func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mustAllocate is bytes allocated from r, failing the test at once when
// the allocation fails.
func mustAllocate(t *testing.T, r cmr.Resource, bytes uint64) uintptr {
	t.Helper()
	address, err := r.Allocate(bytes)
	mustOK(t, err)
	return address
}

// mustPool is a pool of 1 MiB to start with over upstream; the test closes it.
func mustPool(t *testing.T, upstream cmr.Resource) *cmr.PoolResource {
	t.Helper()
	pool, err := cmr.NewPoolResource(upstream, cmr.WithInitialPoolSize(MiB))
	mustOK(t, err)
	return pool
}

// counted is a statistics adaptor over system to build on, and a second
// value of the same adaptor (its own share) that stays open to read the
// counters after everything built on it is closed.
func counted(t *testing.T) (base *cmr.Stack, probe *cmr.StatisticsResource) {
	t.Helper()
	base, err := cmr.ParseStack("statistics(system)")
	mustOK(t, err)
	top, err := base.Top()
	mustOK(t, err)
	t.Cleanup(func() {
		base.Close()
		top.Close()
	})
	return base, top.(*cmr.StatisticsResource)
}

// expectOutstanding fails the test unless probe counts bytes and allocations outstanding.
func expectOutstanding(t *testing.T, probe *cmr.StatisticsResource, bytes, allocations uint64) {
	t.Helper()
	gotBytes, err := probe.BytesCurrent()
	mustOK(t, err)
	gotAllocations, err := probe.AllocationsCurrent()
	mustOK(t, err)
	if gotBytes != bytes || gotAllocations != allocations {
		t.Fatalf("outstanding upstream: %d bytes in %d allocations, want %d in %d",
			gotBytes, gotAllocations, bytes, allocations)
	}
}

// expectStatus fails the test unless err is a *cmr.Error of status.
func expectStatus(t *testing.T, err error, status cmr.Status, what string) {
	t.Helper()
	var cmrErr *cmr.Error
	if !errors.Is(err, status) || !errors.As(err, &cmrErr) || cmrErr.Message == "" {
		t.Fatalf("%s: got %v, want %v with a message", what, err, status)
	}
}

// roundTrip allocates bytes through r, writes them where they are host
// memory (a simulated resource's addresses are not memory), and frees them.
func roundTrip(t *testing.T, r cmr.Resource, bytes uint64) {
	t.Helper()
	address, err := r.Allocate(bytes)
	if err != nil {
		t.Fatalf("allocating %d bytes: %v", bytes, err)
	}
	if address == 0 || address%uintptr(cmr.DefaultAlignment) != 0 {
		t.Fatalf("allocating %d bytes gave address %#x, not a nonzero multiple of 256", bytes, address)
	}
	properties, err := r.Properties()
	mustOK(t, err)
	if properties&cmr.HostAccessible != 0 {
		fill(address, bytes, 0x5a)
	}
	if err := r.Deallocate(address, bytes); err != nil {
		t.Fatalf("freeing %d bytes: %v", bytes, err)
	}
}
