// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

const MiB = 1 << 20

func TestResourcesTypedMethods(t *testing.T) {
	system := mustSystem(t)
	pool, err := cmr.NewPoolResource(system, cmr.WithInitialPoolSize(MiB))
	mustOK(t, err)
	defer pool.Close()
	if size, err := pool.PoolSize(); err != nil || size != MiB {
		t.Fatalf("pool size %d (%v), want %d", size, err, MiB)
	}
	if pool.Upstream() != cmr.Resource(system) {
		t.Fatal("the pool does not report the upstream it was made over")
	}
	limiting, err := cmr.NewLimitingResource(system, 8192)
	mustOK(t, err)
	defer limiting.Close()
	address := mustAllocate(t, limiting, 1000)
	used, err := limiting.AllocatedBytes()
	mustSize(t, "limiting's count of 1000 bytes, rounded up", used, err, 1024)
	mustOK(t, limiting.Deallocate(address, 1000))
	binning, err := cmr.NewBinningResource(system)
	mustOK(t, err)
	defer binning.Close()
	mustOK(t, binning.AddBin(4096))
	if size, err := binning.BinSizeFor(1000); err != nil || size != 4096 {
		t.Fatalf("bin for 1000 bytes: %d (%v), want 4096", size, err)
	}
	if size, err := binning.BinSizeFor(8192); err != nil || size != 0 {
		t.Fatalf("bin for 8192 bytes: %d (%v), want 0 (the upstream)", size, err)
	}
}

// An option left out takes the spec's default; any value given is a value,
// the extremes that once meant "default" too, which the resources refuse.
func TestResourcesOptionsLeftOutAreDefaults(t *testing.T) {
	system := mustSystem(t)
	blocks, err := cmr.NewFixedSizeResource(system, cmr.WithBlocksToPreallocate(1))
	mustOK(t, err)
	defer blocks.Close()
	if size, err := blocks.BlockSize(); err != nil || size != MiB {
		t.Fatalf("default block size %d (%v), want %d", size, err, MiB)
	}
	_, err = cmr.NewFixedSizeResource(system, cmr.WithBlockSize(math.MaxUint64))
	expectStatus(t, err, cmr.ErrSizeOverflow, "a block of 2^64-1 bytes")
	_, err = cmr.NewBinningResource(system, cmr.WithMinSizeExponent(10),
		cmr.WithMaxSizeExponent(math.MinInt32))
	expectStatus(t, err, cmr.ErrInvalidArgument, "a max_size_exponent of math.MinInt32")
	if !strings.Contains(err.Error(), "max_size_exponent -2147483648 is outside") {
		t.Fatalf("message %q does not name the value", err)
	}
	_, err = cmr.NewBinningResource(system, cmr.WithMinSizeExponent(math.MaxInt32+1))
	expectStatus(t, err, cmr.ErrInvalidArgument, "an exponent beyond a C int")
}

func TestResourcesLoggingWritesRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.csv")
	logging, err := cmr.NewLoggingResource(mustSystem(t), cmr.WithFilename(path))
	mustOK(t, err)
	roundTrip(t, logging, 1000)
	if name, err := logging.Filename(); err != nil || name != path {
		t.Fatalf("filename %q (%v), want %q", name, err, path)
	}
	mustOK(t, logging.Close())
	log, err := os.ReadFile(path)
	mustOK(t, err)
	const want = 3 // the header, the allocation, the free
	if rows := countLines(log); rows != want {
		t.Fatalf("the log holds %d rows, want %d:\n%s", rows, want, log)
	}
}

func countLines(text []byte) (lines int) {
	for _, b := range text {
		if b == '\n' {
			lines++
		}
	}
	return lines
}

func TestResourcesCallbackOverGoFunctions(t *testing.T) {
	system := mustSystem(t)
	var calls, frees int
	callback, err := cmr.NewCallbackResource(
		func(bytes uint64, stream cmr.Stream) uintptr {
			calls++
			address, _ := system.AllocateOn(bytes, stream)
			return address
		},
		func(address uintptr, bytes uint64, stream cmr.Stream) {
			frees++
			system.DeallocateOn(address, bytes, stream)
		},
		cmr.WithProperties(cmr.HostAccessible))
	mustOK(t, err)
	roundTrip(t, callback, 1000)
	if properties, err := callback.Properties(); err != nil || properties != cmr.HostAccessible {
		t.Fatalf("properties %v (%v), want host accessible", properties, err)
	}
	if calls != 1 || frees != 1 {
		t.Fatalf("%d allocate and %d deallocate calls, want 1 and 1", calls, frees)
	}
	mustOK(t, callback.Close())
}

// expectPanic runs call, which must panic with want: a callback's panic,
// raised again by the call that ran it once that call is back from C.
func expectPanic(t *testing.T, what string, want any, call func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if got := recover(); got != want {
			t.Fatalf("%s: panicked with %v, want %v", what, got, want)
		}
	}()
	call()
	t.Fatalf("%s: no panic", what)
}

// A panic in a callback does not unwind through C, and is no out of memory:
// the call that ran the callback panics with its value, directly or
// through an adaptor, and the next call works.
func TestResourcesCallbackPanicReachesTheCaller(t *testing.T) {
	system := mustSystem(t)
	fail := true
	callback, err := cmr.NewCallbackResource(
		func(bytes uint64, stream cmr.Stream) uintptr {
			if fail {
				panic("no memory here")
			}
			address, _ := system.AllocateOn(bytes, stream)
			return address
		},
		func(address uintptr, bytes uint64, stream cmr.Stream) {
			if bytes == 7 {
				panic(fmt.Errorf("freeing %d bytes", bytes))
			}
			system.DeallocateOn(address, bytes, stream)
		})
	mustOK(t, err)
	defer callback.Close()
	expectPanic(t, "Allocate", "no memory here", func() { callback.Allocate(1000) })
	statistics, err := cmr.NewStatisticsResource(callback)
	mustOK(t, err)
	defer statistics.Close()
	expectPanic(t, "Allocate through an adaptor", "no memory here", func() { statistics.Allocate(1000) })
	expectPanic(t, "NewPoolResource, which preallocates", "no memory here", func() {
		cmr.NewPoolResource(callback, cmr.WithInitialPoolSize(MiB))
	})
	fail = false
	roundTrip(t, statistics, 1000) // no panic was left pending for a later call
	address := mustAllocate(t, callback, 7)
	defer func() {
		t.Helper()
		if got, ok := recover().(error); !ok || got.Error() != "freeing 7 bytes" {
			t.Fatalf("Deallocate panicked with %v, want the callback's error", got)
		}
		roundTrip(t, callback, 1000)
	}()
	callback.Deallocate(address, 7)
	t.Fatal("Deallocate: no panic")
}

func TestResourcesFailureCallbackRetries(t *testing.T) {
	limiting, err := cmr.NewLimitingResource(mustSystem(t), 4096)
	mustOK(t, err)
	defer limiting.Close()
	var asked []uint64
	retrying, err := cmr.NewFailureCallbackResource(limiting, func(bytes uint64) bool {
		asked = append(asked, bytes)
		return len(asked) < 3
	})
	mustOK(t, err)
	defer retrying.Close()
	_, err = retrying.Allocate(8192)
	expectStatus(t, err, cmr.ErrOutOfMemory, "allocating past the limit")
	if len(asked) != 3 || asked[0] != 8192 {
		t.Fatalf("the callback was asked %v, want 8192 three times", asked)
	}
}

func mustSize(t *testing.T, what string, got uint64, err error, want uint64) {
	t.Helper()
	if err != nil || got != want {
		t.Fatalf("%s: %d (%v), want %d", what, got, err, want)
	}
}

func TestPoolFragmentationToolsReturnMemoryToTheUpstream(t *testing.T) {
	upstream, err := cmr.NewSimulatedResource(cmr.WithCapacity(1 << 30))
	mustOK(t, err)
	defer upstream.Close()
	pool, err := cmr.NewPoolResource(upstream, cmr.WithInitialPoolSize(0), cmr.WithMaximumGrowth(MiB))
	mustOK(t, err)
	defer pool.Close()
	a := mustAllocate(t, pool, 4*MiB) // a chunk of the request's size
	b := mustAllocate(t, pool, 256)   // doubling would take 4 MiB more; the maximum growth caps it at 1 MiB
	size, err := pool.PoolSize()
	mustSize(t, "pool size", size, err, 5*MiB)
	used, err := upstream.BytesInUse()
	mustSize(t, "upstream bytes", used, err, 5*MiB)
	largest, err := pool.LargestFreeBlock()
	mustSize(t, "largest free block", largest, err, MiB-256)
	mustOK(t, pool.Deallocate(a, 4*MiB))
	if err := pool.Release(); err != nil { // the 4 MiB chunk is wholly free: back to the upstream
		t.Fatal(err)
	}
	size, err = pool.PoolSize()
	mustSize(t, "pool size after release", size, err, MiB)
	used, err = upstream.BytesInUse()
	mustSize(t, "upstream bytes after release", used, err, MiB)
	mustOK(t, pool.Deallocate(b, 256))
	largest, err = pool.LargestFreeBlock()
	mustSize(t, "largest free block, all free", largest, err, MiB)
	mustOK(t, pool.Release())
	used, err = upstream.BytesInUse()
	mustSize(t, "upstream bytes at the end", used, err, 0)
}

func TestArenaAndBinningReportTheirLargestFreeBlock(t *testing.T) {
	upstream, err := cmr.NewSimulatedResource(cmr.WithCapacity(1 << 30))
	mustOK(t, err)
	defer upstream.Close()
	arena, err := cmr.NewArenaResource(upstream, cmr.WithArenaSize(4*MiB))
	mustOK(t, err)
	defer arena.Close()
	largest, err := arena.LargestFreeBlock()
	mustSize(t, "arena, new", largest, err, 4*MiB)
	ptr := mustAllocate(t, arena, 1000) // a 1 MiB superblock leaves the global arena
	largest, err = arena.LargestFreeBlock()
	mustSize(t, "arena, one superblock out", largest, err, 3*MiB)
	mustOK(t, arena.Deallocate(ptr, 1000))
	binning, err := cmr.NewBinningResource(upstream, cmr.WithMinSizeExponent(8), cmr.WithMaxSizeExponent(10))
	mustOK(t, err)
	defer binning.Close()
	largest, err = binning.LargestFreeBlock()
	mustSize(t, "binning", largest, err, 1024) // the largest bin's preallocated blocks
}

// The tracking adaptor's snapshot: each outstanding allocation's pointer,
// size, alignment, stream and stack, read by index.
func TestTrackingSnapshot(t *testing.T) {
	system := mustSystem(t)
	tracking, err := cmr.NewTrackingResource(system, cmr.WithCaptureStacks(true))
	mustOK(t, err)
	defer tracking.Close()
	address := mustAllocate(t, tracking, 1000)
	if count, err := tracking.OutstandingSnapshot(); err != nil || count != 1 {
		t.Fatalf("snapshot of %d allocations (%v), want 1", count, err)
	}
	if pointer, err := tracking.SnapshotPointer(0); err != nil || pointer != address {
		t.Fatalf("snapshot pointer %#x (%v), want %#x", pointer, err, address)
	}
	if size, err := tracking.SnapshotBytes(0); err != nil || size != 1000 {
		t.Fatalf("snapshot size %d (%v), want 1000", size, err)
	}
	if alignment, err := tracking.SnapshotAlignment(0); err != nil || alignment != 256 {
		t.Fatalf("snapshot alignment %d (%v), want 256", alignment, err)
	}
	if stream, err := tracking.SnapshotStream(0); err != nil || stream != 0 {
		t.Fatalf("snapshot stream %#x (%v), want the default stream", stream, err)
	}
	if stack, err := tracking.SnapshotStack(0); err != nil || !strings.HasPrefix(stack, "#0 in ") {
		t.Fatalf("snapshot stack %q (%v), want frames", stack, err)
	}
	_, err = tracking.SnapshotBytes(1)
	expectStatus(t, err, cmr.ErrInvalidArgument, "an index past the snapshot")
	mustOK(t, tracking.Deallocate(address, 1000))
	if count, err := tracking.OutstandingSnapshot(); err != nil || count != 0 {
		t.Fatalf("snapshot of %d allocations (%v), want 0", count, err)
	}
}
