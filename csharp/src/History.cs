// SPDX-License-Identifier: Apache-2.0
namespace Cmr
{
    /// <summary>The forms History.WriteSnapshot writes.</summary>
    public enum SnapshotFormat
    {
        /// <summary>PyTorch's snapshot dict, pickle protocol 4.</summary>
        Pickle = 1,
        /// <summary>The same, pickle protocol 2.</summary>
        Pickle2 = 2,
        /// <summary>The same dict as JSON.</summary>
        Json = 3,
        /// <summary>cmr's self-contained HTML report of it.</summary>
        Html = 4,
    }

    /// <summary>
    /// cmr's allocation history and memory snapshots (cmr/history.h), shared
    /// by C and every language. While it records, every allocation and free
    /// through any cmr resource, each suballocator's growth from and release
    /// to its upstream, each out-of-memory failure and failure-callback
    /// retry is kept, with its time, resource, stream, address, size and,
    /// when asked, its C call stack, in a bounded ring (the oldest events are
    /// overwritten). Off, it costs one predictable branch per call.
    /// WriteSnapshot writes what a resource stack holds now, with the
    /// history, as PyTorch's memory snapshot (torch.cuda._memory_viz and
    /// `python3 -m cmr.viz` open it) or cmr's self-contained HTML report.
    /// </summary>
    public static class History
    {
        /// <summary>Starts recording into a new, empty history of `capacity`
        /// events (0: 65,536; at most 2^26), with C call stacks `stackDepth`
        /// frames deep when `cStacks` (0: 16; at most 64); values past those
        /// limits are a CmrException of Status.InvalidArgument.</summary>
        public static void Start(ulong capacity = 0, bool cStacks = false, uint stackDepth = 0)
        {
            CmrNative.cmr_history_start_with(capacity, cStacks, stackDepth);
        }

        /// <summary>Stops recording; what was recorded stays in snapshots until the next Start.</summary>
        public static void Stop()
        {
            CmrNative.cmr_history_stop();
        }

        /// <summary>Whether the history records now.</summary>
        public static bool IsRecording
        {
            get { return CmrNative.cmr_history_recording(); }
        }

        /// <summary>Writes the snapshot of the resource stack `resource` (its
        /// suballocators' segments and the history's events that concern it)
        /// to `path`; a file that cannot be written is a CmrIOException.</summary>
        public static void WriteSnapshot(MemoryResource resource, SnapshotFormat format, string path)
        {
            if (path == null) throw new System.ArgumentNullException("path");
            using (var lease = new Lease(resource, "resource"))
            {
                CmrNative.cmr_snapshot_write_to(lease.Ref, (int)format, path);
            }
        }
    }
}
