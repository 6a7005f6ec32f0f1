// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

func TestHistoryAndSnapshot(t *testing.T) {
	defer cmr.StopHistory()
	if err := cmr.StartHistory(cmr.HistoryOptions{Capacity: 1 << 27}); !errors.Is(err, cmr.ErrInvalidArgument) {
		t.Fatalf("a capacity past the most: %v, want ErrInvalidArgument", err)
	}
	system, err := cmr.NewSystemResource()
	mustOK(t, err)
	defer system.Close()
	pool, err := cmr.NewPoolResource(system, cmr.WithInitialPoolSize(1<<20))
	mustOK(t, err)
	defer pool.Close()
	mustOK(t, cmr.StartHistory(cmr.HistoryOptions{CStacks: true, StackDepth: 8}))
	if !cmr.HistoryRecording() {
		t.Fatal("not recording after StartHistory")
	}
	address := mustAllocate(t, pool, 1000)
	dir := t.TempDir()
	path := filepath.Join(dir, "snapshot.json")
	mustOK(t, cmr.WriteSnapshot(pool, cmr.SnapshotJSON, path))
	mustOK(t, pool.Deallocate(address, 1000))
	mustOK(t, cmr.StopHistory())
	if cmr.HistoryRecording() {
		t.Fatal("recording after StopHistory")
	}
	text, err := os.ReadFile(path)
	mustOK(t, err)
	var snapshot struct {
		Segments []struct {
			TotalSize uint64 `json:"total_size"`
			Blocks    []struct {
				Address uint64 `json:"address"`
				State   string `json:"state"`
			} `json:"blocks"`
		} `json:"segments"`
		Traces [][]struct {
			Action string `json:"action"`
			Size   uint64 `json:"size"`
		} `json:"device_traces"`
	}
	mustOK(t, json.Unmarshal(text, &snapshot))
	if len(snapshot.Segments) != 1 || snapshot.Segments[0].TotalSize != 1<<20 {
		t.Fatalf("segments %+v, want one of 1 MiB", snapshot.Segments)
	}
	if b := snapshot.Segments[0].Blocks[0]; b.State != "active_allocated" || uintptr(b.Address) != address {
		t.Fatalf("first block %+v, want the allocation at %#x", b, address)
	}
	if tr := snapshot.Traces[0]; len(tr) != 1 || tr[0].Action != "alloc" || tr[0].Size != 1000 {
		t.Fatalf("traces %+v, want the one alloc", tr)
	}
	for _, format := range []cmr.SnapshotFormat{cmr.SnapshotPickle, cmr.SnapshotPickle2, cmr.SnapshotHTML} {
		mustOK(t, cmr.WriteSnapshot(pool, format, filepath.Join(dir, "s")))
	}
	page, err := os.ReadFile(filepath.Join(dir, "s"))
	mustOK(t, err)
	if !strings.HasPrefix(string(page), "<!DOCTYPE html>") {
		t.Fatal("the HTML snapshot is not a page")
	}
	if err := cmr.WriteSnapshot(pool, cmr.SnapshotJSON, filepath.Join(dir, "no", "such")); !errors.Is(err, cmr.ErrIO) {
		t.Fatalf("an unwritable path: %v, want ErrIO", err)
	}
	if err := cmr.WriteSnapshot(pool, cmr.SnapshotFormat(9), path); !errors.Is(err, cmr.ErrInvalidArgument) {
		t.Fatalf("format 9: %v, want ErrInvalidArgument", err)
	}
	if err := cmr.WriteSnapshot(nil, cmr.SnapshotJSON, path); !errors.Is(err, cmr.ErrInvalidRef) {
		t.Fatalf("a nil resource: %v, want ErrInvalidRef", err)
	}
}
