// SPDX-License-Identifier: Apache-2.0

package cmr

import "github.com/cmr-project/cmr/go/internal/capi"

// The allocation history (cmr/history.h), shared by C and every language:
// while it records, every allocation and free through any cmr resource,
// each suballocator's growth from and release to its upstream, each
// out-of-memory failure and failure-callback retry is kept, with its time,
// resource, stream, address, size and, when asked, its C call stack, in a
// bounded ring (the oldest events are overwritten). Off, it costs one
// predictable branch per call. WriteSnapshot writes what a resource stack
// holds now, with the history, as PyTorch's memory snapshot or cmr's HTML
// report.

// HistoryOptions says how StartHistory records. The zero value asks for
// the defaults: 65,536 events, no stacks.
type HistoryOptions struct {
	// Capacity is the events kept (0: 65,536; at most 2^26).
	Capacity uint64
	// CStacks takes each event's C call stack, StackDepth frames deep
	// (0: 16; at most 64).
	CStacks    bool
	StackDepth uint
}

// StartHistory starts recording into a new, empty history; options outside
// the limits are ErrInvalidArgument.
func StartHistory(options HistoryOptions) error {
	return check(capi.Cmr_history_start_with(options.Capacity, options.CStacks, options.StackDepth))
}

// StopHistory stops recording; what was recorded stays in snapshots until
// the next StartHistory.
func StopHistory() error { return check(capi.Cmr_history_stop()) }

// HistoryRecording says whether the history records now.
func HistoryRecording() bool { return capi.Cmr_history_recording() }

// SnapshotFormat is the form WriteSnapshot writes.
type SnapshotFormat int

const (
	SnapshotPickle  SnapshotFormat = iota + 1 // PyTorch's snapshot dict, pickle protocol 4
	SnapshotPickle2                           // the same, pickle protocol 2
	SnapshotJSON                              // the same dict as JSON
	SnapshotHTML                              // cmr's self-contained HTML report of it
)

// WriteSnapshot writes the snapshot of the resource stack r (its
// suballocators' segments and the history's events that concern it) to
// path; a file that cannot be written is ErrIO.
func WriteSnapshot(r Resource, format SnapshotFormat, path string) error {
	ref, err := refOf(r, "r")
	if err != nil {
		return err
	}
	return check(capi.Cmr_snapshot_write_to(ref, int(format), path))
}
