// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.lang.ref.Reference;

/**
 * cmr's allocation history and memory snapshots (cmr/history.h), shared by C and every language.
 * While it records, every allocation and free through any cmr resource, each suballocator's growth
 * from and release to its upstream, each out-of-memory failure and failure-callback retry is kept,
 * with its time, resource, stream, address, size and, when asked, its C call stack, in a bounded
 * ring (the oldest events are overwritten). Off, it costs one predictable branch per call. {@link
 * #writeSnapshot} writes what a resource stack holds now, with the history, as PyTorch's memory
 * snapshot (which {@code torch.cuda._memory_viz} and {@code python3 -m cmr.viz} open) or as cmr's
 * self-contained HTML report.
 */
public final class History {
  private History() {}

  /** The forms {@link #writeSnapshot} writes. */
  public enum SnapshotFormat {
    /** PyTorch's snapshot dict, pickle protocol 4. */
    PICKLE(1),
    /** The same, pickle protocol 2. */
    PICKLE_2(2),
    /** The same dict as JSON. */
    JSON(3),
    /** cmr's self-contained HTML report of it. */
    HTML(4);

    private final int value;

    SnapshotFormat(int value) {
      this.value = value;
    }
  }

  /**
   * Starts recording into a new, empty history of {@code capacity} events (0: 65,536; at most
   * 2^26), with C call stacks {@code stackDepth} frames deep when {@code cStacks} (0: 16; at most
   * 64). Values outside those limits are {@link Status#ERROR_INVALID_ARGUMENT}.
   */
  public static void start(long capacity, boolean cStacks, int stackDepth) {
    if (stackDepth < 0) {
      throw new IllegalArgumentException("stackDepth is " + stackDepth + ": it cannot be negative");
    }
    CmrNativeJNI.cmr_history_start_with(Arguments.size("capacity", capacity), cStacks, stackDepth);
  }

  /** Starts recording with the defaults: 65,536 events, no stacks. */
  public static void start() {
    start(0, false, 0);
  }

  /** Stops recording; what was recorded stays in snapshots until the next start. */
  public static void stop() {
    CmrNativeJNI.cmr_history_stop();
  }

  /** Whether the history records now. */
  public static boolean isRecording() {
    return CmrNativeJNI.cmr_history_recording();
  }

  /**
   * Writes the snapshot of the resource stack {@code resource} (its suballocators' segments and the
   * history's events that concern it) to {@code path}; a file that cannot be written is a {@link
   * CmrIOException}.
   */
  public static void writeSnapshot(MemoryResource resource, SnapshotFormat format, String path) {
    if (format == null || path == null) {
      throw new NullPointerException((format == null ? "format" : "path") + " is null");
    }
    try {
      CmrNativeJNI.cmr_snapshot_write_to(Arguments.ref("resource", resource), format.value, path);
    } finally {
      Reference.reachabilityFence(resource);
    }
  }
}
