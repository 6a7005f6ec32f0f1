// SPDX-License-Identifier: Apache-2.0

package cmr

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cmr-project/cmr/go/internal/capi"
)

// StatsField names one field of Stats, as a bit of Stats.Supported.
type StatsField uint32

const (
	StatsBytesInUse StatsField = 1 << iota
	StatsBytesInUsePeak
	StatsBytesHeld
	StatsBytesHeldPeak
	StatsAllocations
	StatsDeallocations
	StatsBytesFree
	StatsFreeBlocks
	StatsLargestFreeBlock
	StatsOutOfMemoryCount
	StatsFailureCallbackRetries
	StatsSegments
	StatsStreamLists
	StatsPoolBytesUsed
	StatsPoolBytesUsedPeak
)

// Stats is what a resource knows about its memory at one moment (C's
// cmr_ref_stats). A field the resource does not know is 0 and its bit is
// clear in Supported. What each field means for each kind of resource is
// in the API reference ("Statistics").
type Stats struct {
	Supported              StatsField // the fields filled
	BytesInUse             uint64     // bytes the callers asked for and hold
	BytesInUsePeak         uint64     // the most at once since creation or the last reset
	BytesHeld              uint64     // bytes held from the memory below, in use or free
	BytesHeldPeak          uint64     // the most at once since creation or the last reset
	Allocations            uint64     // successful allocations since creation
	Deallocations          uint64     // successful deallocations since creation
	BytesFree              uint64     // free bytes held
	FreeBlocks             uint64     // free blocks held
	LargestFreeBlock       uint64     // the most one allocation could take without new memory
	OutOfMemoryCount       uint64     // allocations answered with out of memory
	FailureCallbackRetries uint64     // retries a failure callback asked for
	Segments               uint64     // pieces held from below (a suballocator's chunks)
	StreamLists            uint64     // streams (and threads) with free memory lists
	PoolBytesUsed          uint64     // a CUDA pool's bytes in use by every user of it
	PoolBytesUsedPeak      uint64     // their high
}

// Has tells whether the resource filled field.
func (s Stats) Has(field StatsField) bool { return s.Supported&field != 0 }

func statsOf(fields [capi.StatsFields]uint64) Stats {
	return Stats{StatsField(fields[0]), fields[1], fields[2], fields[3], fields[4], fields[5], fields[6], fields[7],
		fields[8], fields[9], fields[10], fields[11], fields[12], fields[13], fields[14], fields[15]}
}

// StatsOf reads what r knows about its memory now.
func StatsOf(r Resource) (Stats, error) {
	ref, err := r.cref()
	if err != nil {
		return Stats{}, err
	}
	var fields [capi.StatsFields]uint64
	if err := check(capi.Cmr_go_ref_stats(ref, &fields[0])); err != nil {
		return Stats{}, err
	}
	return statsOf(fields), nil
}

// ResetPeakStats sets every peak of r (and, through an adaptor, of its
// upstream) to its current value.
func ResetPeakStats(r Resource) error {
	ref, err := r.cref()
	if err != nil {
		return err
	}
	return check(capi.Cmr_ref_reset_peak_stats(ref))
}

// OutOfMemoryEvent is what an out-of-memory observer is told: the
// resource that ran out (its kind; IsFrom tells whether it is a given
// one), its statistics then, the request, and the message of the error
// the caller gets.
type OutOfMemoryEvent struct {
	ResourceType string
	Stats        Stats
	Bytes        uint64
	Alignment    uint64
	Stream       Stream
	Message      string
	identity     uintptr
}

// IsFrom tells whether r is the resource that ran out.
func (e OutOfMemoryEvent) IsFrom(r Resource) bool {
	ref, err := r.cref()
	return err == nil && capi.Cmr_go_ref_identity(ref) == uint64(e.identity)
}

// The observer's Go side: the function the trampoline calls, and the
// first panic it raised.
var (
	observer        atomic.Pointer[func(OutOfMemoryEvent)]
	observerPanicMu sync.Mutex
	observerPanic   any
)

func init() { capi.OutOfMemory = deliverOutOfMemory }

// SetOutOfMemoryObserver makes observe the process-wide out-of-memory
// observer (nil: none): it is called each time a resource answers an
// allocation with out of memory, before the error returns, once per
// failure (by the innermost resource that ran out). It runs inside the
// allocation, on its thread; it may read statistics but must not allocate
// from the resources of that allocation (their locks may be held); a
// failure inside it does not call it again, and setting the observer from
// inside it is refused (ErrReentrantCall). A panic in it does not unwind
// through cmr: it is recovered, written to standard error and kept
// (ObserverPanic). When SetOutOfMemoryObserver returns, the observer
// before is running nowhere.
func SetOutOfMemoryObserver(observe func(OutOfMemoryEvent)) error {
	var next *func(OutOfMemoryEvent)
	if observe != nil {
		next = &observe
	}
	previous := observer.Swap(next)
	if err := check(capi.Cmr_go_set_oom_observer(observe != nil)); err != nil {
		observer.Store(previous)
		return err
	}
	return nil
}

// ObserverPanic is the value of the first panic an out-of-memory observer
// raised, or nil.
func ObserverPanic() any {
	observerPanicMu.Lock()
	defer observerPanicMu.Unlock()
	return observerPanic
}

func deliverOutOfMemory(typeName string, identity uintptr, fields [capi.StatsFields]uint64, bytes, alignment uint64,
	stream uintptr, message string) {
	call := observer.Load()
	if call == nil {
		return
	}
	defer func() {
		if value := recover(); value != nil {
			fmt.Fprintf(os.Stderr, "cmr: the out-of-memory observer panicked: %v\n", value)
			observerPanicMu.Lock()
			if observerPanic == nil {
				observerPanic = value
			}
			observerPanicMu.Unlock()
		}
	}()
	(*call)(OutOfMemoryEvent{typeName, statsOf(fields), bytes, alignment, Stream(stream), message, identity})
}
