// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

func TestStackStatisticsCounters(t *testing.T) {
	stack, err := cmr.ParseStack("statistics(pool(system, initial_pool_size=1MiB))")
	mustOK(t, err)
	defer stack.Close()
	expression, err := stack.Expression()
	if err != nil || !strings.Contains(expression, "maximum_pool_size=") {
		t.Fatalf("expression %q (%v): want every default written out", expression, err)
	}
	top, err := stack.Top()
	mustOK(t, err)
	defer top.Close()
	statistics := top.(*cmr.StatisticsResource)
	first := mustAllocate(t, stack, 1000)
	mustOK(t, statistics.PushCounters())
	second := mustAllocate(t, stack, 3000)
	if total, _ := statistics.BytesTotal(); total != 3000 {
		t.Fatalf("bytes total of the pushed level: %d, want 3000", total)
	}
	expectOutstanding(t, statistics, 4000, 2)
	for _, freed := range []struct {
		address uintptr
		bytes   uint64
	}{{first, 1000}, {second, 3000}} {
		mustOK(t, stack.Deallocate(freed.address, freed.bytes))
	}
	if peak, _ := statistics.BytesPeak(); peak != 3000 {
		t.Fatalf("bytes peak of the pushed level %d, want 3000 (counted from its push)", peak)
	}
	mustOK(t, statistics.PopCounters())
	expectStatus(t, statistics.PopCounters(), cmr.ErrInvalidArgument, "popping the base level")
	expectOutstanding(t, statistics, 0, 0)
	leaf, err := stack.Leaf()
	mustOK(t, err)
	defer leaf.Close()
	if _, isSystem := leaf.(*cmr.SystemResource); !isSystem {
		t.Fatalf("the leaf is a %T, want a *cmr.SystemResource", leaf)
	}
}

func TestStackOutOfMemory(t *testing.T) {
	stack, err := cmr.ParseStack("limiting(system, allocation_limit=1MiB)")
	mustOK(t, err)
	defer stack.Close()
	_, err = stack.Allocate(2 << 20)
	expectStatus(t, err, cmr.ErrOutOfMemory, "2 MiB from a 1 MiB limit")
}

func TestStackDeviceBuffer(t *testing.T) {
	stack, err := cmr.ParseStack("pool(system, initial_pool_size=1MiB)")
	mustOK(t, err)
	defer stack.Close()
	data := []byte("0123456789abcdef")
	buffer, err := cmr.NewDeviceBufferFrom(data, cmr.DefaultStream, stack)
	mustOK(t, err)
	defer buffer.Close()
	mustOK(t, buffer.Resize(4096, cmr.DefaultStream))
	if size, _ := buffer.Size(); size != 4096 {
		t.Fatalf("size %d after Resize(4096)", size)
	}
	kept := make([]byte, len(data))
	if err := buffer.CopyToHost(kept); err != nil || !bytes.Equal(kept, data) {
		t.Fatalf("after growing, the buffer starts with %q (%v), want %q", kept, err, data)
	}
	mustOK(t, buffer.CopyFromHost([]byte("ABCD")))
	mustOK(t, buffer.Resize(4, cmr.DefaultStream))
	mustOK(t, buffer.ShrinkToFit(cmr.DefaultStream))
	if capacity, _ := buffer.Capacity(); capacity != 4 {
		t.Fatalf("capacity %d after ShrinkToFit at size 4", capacity)
	}
	expectStatus(t, buffer.CopyToHost(make([]byte, 5)), cmr.ErrInvalidArgument, "copying 5 bytes out of 4")
	resource, err := buffer.Resource()
	mustOK(t, err)
	defer resource.Close()
	if equal, err := resource.IsEqual(stack); err != nil || !equal {
		t.Fatalf("the buffer's resource is not the stack's top (%v)", err)
	}
}

func TestDeviceBufferAlignment(t *testing.T) {
	system := mustSystem(t)
	buffer, err := cmr.NewDeviceBufferAligned(100, 4096, cmr.DefaultStream, system)
	mustOK(t, err)
	defer buffer.Close()
	aligned := func(step string) {
		t.Helper()
		if data, err := buffer.Data(); err != nil || data%4096 != 0 {
			t.Fatalf("%s: %#x (%v) is not aligned to 4096", step, data, err)
		}
	}
	aligned("created")
	mustOK(t, buffer.Reserve(10000, cmr.DefaultStream))
	aligned("reserved")
	mustOK(t, buffer.ShrinkToFit(cmr.DefaultStream))
	aligned("shrunk")
	if alignment, err := buffer.Alignment(); err != nil || alignment != 4096 {
		t.Fatalf("Alignment() = %d (%v), want 4096", alignment, err)
	}
	copied, err := cmr.NewDeviceBufferFromAligned([]byte("aligned"), 1024, cmr.DefaultStream, system)
	mustOK(t, err)
	defer copied.Close()
	kept := make([]byte, 7)
	mustOK(t, copied.CopyToHost(kept))
	if data, _ := copied.Data(); data%1024 != 0 || string(kept) != "aligned" {
		t.Fatalf("a copy at %#x holds %q", data, kept)
	}
	plain, err := cmr.NewDeviceBuffer(10, cmr.DefaultStream, system)
	mustOK(t, err)
	defer plain.Close()
	if alignment, _ := plain.Alignment(); alignment != cmr.DefaultAlignment {
		t.Fatalf("the default alignment is %d", alignment)
	}
	_, err = cmr.NewDeviceBufferAligned(10, 3000, cmr.DefaultStream, system)
	expectStatus(t, err, cmr.ErrBadAlignment, "alignment 3000")
}
