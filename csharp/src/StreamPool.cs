// SPDX-License-Identifier: Apache-2.0
using System;

namespace Cmr
{
    /// <summary>How a stream orders its work against the default stream (RMM's cuda_stream::flags).</summary>
    public enum StreamFlags : uint
    {
        /// <summary>Synchronizes with the default stream.</summary>
        SyncDefault = 0,
        /// <summary>Does not synchronize with the default stream (cudaStreamNonBlocking).</summary>
        NonBlocking = 1
    }

    /// <summary>
    /// A pool of streams handed out round robin, as RMM's cuda_stream_pool.
    /// The streams belong to the pool and are destroyed with it: use them
    /// (as IntPtr, where a stream is asked for) only until Dispose.
    /// </summary>
    public sealed class StreamPool : IDisposable
    {
        /// <summary>RMM's default number of streams.</summary>
        public const ulong DefaultSize = 16;

        private readonly StreamPoolHandle owned;

        /// <summary>The handle; ObjectDisposedException naming the class once disposed.</summary>
        private StreamPoolHandle Handle
        {
            get { return OwnedHandle.Opened(owned, "StreamPool"); }
        }

        /// <summary>A pool of `size` streams (0: DefaultSize) made with `flags`.</summary>
        public StreamPool(ulong size = DefaultSize, StreamFlags flags = StreamFlags.SyncDefault)
        {
            IntPtr raw;
            CmrNative.cmr_stream_pool_create(size, (uint)flags, out raw);
            owned = new StreamPoolHandle(raw);
        }

        /// <summary>The next stream, round robin (thread-safe).</summary>
        public IntPtr GetStream()
        {
            return Results.Of<StreamPoolHandle, IntPtr>(CmrNative.cmr_stream_pool_get_stream, Handle);
        }

        /// <summary>The stream at `index` modulo the pool's size.</summary>
        public IntPtr GetStream(ulong index)
        {
            IntPtr stream;
            CmrNative.cmr_stream_pool_get_stream_at(Handle, index, out stream);
            return stream;
        }

        /// <summary>How many streams the pool holds.</summary>
        public ulong Size
        {
            get { return Results.Of<StreamPoolHandle, ulong>(CmrNative.cmr_stream_pool_size, Handle); }
        }

        /// <summary>Destroys the pool and its streams.</summary>
        public void Dispose()
        {
            owned.Dispose();
        }
    }
}
