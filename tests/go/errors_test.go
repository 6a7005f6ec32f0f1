// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

func TestOutOfMemoryFromLimiting(t *testing.T) {
	system := mustSystem(t)
	limiting, err := cmr.NewLimitingResource(system, 4096)
	mustOK(t, err)
	defer limiting.Close()
	_, err = limiting.Allocate(8192)
	if !errors.Is(err, cmr.ErrOutOfMemory) {
		t.Fatalf("allocating past the limit: %v, want ErrOutOfMemory", err)
	}
	var cmrErr *cmr.Error
	if !errors.As(err, &cmrErr) || cmrErr.Status != cmr.ErrOutOfMemory || !strings.Contains(cmrErr.Message, "8192") {
		t.Fatalf("error %#v: want the status and cmr's message naming the size", err)
	}
}

// A file that cannot be written is ErrIO, with the system's reason: a
// logging adaptor's log, an arena's dump.
func TestErrorsFullDiskIsErrIO(t *testing.T) {
	system := mustSystem(t)
	log, err := cmr.NewLoggingResource(system, cmr.WithFilename("/dev/full"))
	mustOK(t, err)
	defer log.Close()
	address := mustAllocate(t, log, 256) // a row lost does not fail the call
	mustOK(t, log.Deallocate(address, 256))
	err = log.Flush()
	expectStatus(t, err, cmr.ErrIO, "flushing a log on a full device")
	if !strings.Contains(err.Error(), "CMR_ERROR_IO: logging: 3 rows could not be written to /dev/full: No space left on device") {
		t.Fatalf("flushing a log on a full device: %v", err)
	}
	if lost, err := log.LostRows(); err != nil || lost != 3 {
		t.Fatalf("lost rows: %d, %v; want 3", lost, err)
	}
	arena, err := cmr.NewArenaResource(system, cmr.WithArenaSize(1<<20), cmr.WithDumpLogOnFailure(true),
		cmr.WithDumpPath("/dev/full"))
	mustOK(t, err)
	defer arena.Close()
	expectStatus(t, arena.Dump(), cmr.ErrIO, "an arena's dump to a full device")
}

func TestErrorsBadInputs(t *testing.T) {
	system := mustSystem(t)
	_, err := system.AllocateAligned(1000, 3, cmr.DefaultStream)
	expectStatus(t, err, cmr.ErrBadAlignment, "alignment 3")
	fixed, err := cmr.NewFixedSizeResource(system, cmr.WithBlockSize(4096), cmr.WithBlocksToPreallocate(1))
	mustOK(t, err)
	defer fixed.Close()
	_, err = fixed.AllocateAligned(1000, 4096, cmr.DefaultStream)
	expectStatus(t, err, cmr.ErrUnsupportedAlignment, "fixed_size at 4096")

	tracking, err := cmr.NewTrackingResource(system)
	mustOK(t, err)
	defer tracking.Close()
	foreign := mustAllocate(t, system, 1000)
	defer system.Deallocate(foreign, 1000)
	expectStatus(t, tracking.Deallocate(foreign, 1000), cmr.ErrUnknownPointer, "a pointer tracking did not hand out")

	_, err = cmr.NewPoolResource(system, cmr.WithInitialPoolSize(4*MiB), cmr.WithMaximumPoolSize(MiB))
	expectStatus(t, err, cmr.ErrInvalidArgument, "initial_pool_size above maximum_pool_size")
	_, err = cmr.NewPoolResource(nil)
	expectStatus(t, err, cmr.ErrInvalidRef, "a nil upstream")
	var never cmr.PoolResource
	_, err = never.Allocate(1000)
	expectStatus(t, err, cmr.ErrDestroyedHandle, "a zero PoolResource")
	_, err = cmr.NewLoggingResource(system, cmr.WithFilename("a\x00b"))
	expectStatus(t, err, cmr.ErrInvalidArgument, "a filename with a NUL byte")
	_, err = cmr.PerDeviceResource(7)
	expectStatus(t, err, cmr.ErrUnknownDevice, "device 7")
	_, err = cmr.NewCallbackResource(nil, nil)
	expectStatus(t, err, cmr.ErrNullPointer, "nil callbacks")
}

func TestErrorsStackExpression(t *testing.T) {
	_, err := cmr.ParseStack("pool(system, initial_pool_size=1MiB, colour=blue)")
	expectStatus(t, err, cmr.ErrInvalidArgument, "an unknown parameter")
	if !strings.Contains(err.Error(), "colour") || !strings.Contains(err.Error(), "CMR_ERROR_INVALID_ARGUMENT") {
		t.Fatalf("the error %q names neither the parameter nor the status", err)
	}
	_, err = cmr.ParseStack("nonsense")
	expectStatus(t, err, cmr.ErrInvalidArgument, "an unknown resource")
}

// Each goroutine's error carries its own message, even when they fail at
// once: cmr's message is per OS thread, and is read in the failing call.
func TestErrorsMessagesOfConcurrentFailures(t *testing.T) {
	limiting, err := cmr.NewLimitingResource(mustSystem(t), 4096)
	mustOK(t, err)
	defer limiting.Close()
	const goroutines, rounds = 8, 500
	failures := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		go func(bytes uint64) {
			for i := 0; i < rounds; i++ {
				_, err := limiting.Allocate(bytes)
				if !errors.Is(err, cmr.ErrOutOfMemory) || !strings.Contains(err.Error(), fmt.Sprint(bytes)) {
					failures <- fmt.Errorf("allocating %d bytes: %v", bytes, err)
					return
				}
			}
			failures <- nil
		}(uint64(8192 + 256*g))
	}
	for g := 0; g < goroutines; g++ {
		mustOK(t, <-failures)
	}
}
