// SPDX-License-Identifier: Apache-2.0
using System;

namespace Cmr
{
    /// <summary>
    /// A stream of cmr's (a cudaStream_t in CUDA builds; in the host build a
    /// token whose work is always complete), destroyed when disposed or
    /// finalized, or later, when the last DeviceBuffer ordered on it has let
    /// it go. Pass its Handle where a call takes a stream; IntPtr.Zero is
    /// the default stream. Using it once disposed is ObjectDisposedException.
    /// </summary>
    public sealed class CudaStream : IDisposable
    {
        private readonly StreamHandle stream;

        /// <summary>A new stream (cmr_stream_create), which this object owns.</summary>
        public CudaStream()
        {
            IntPtr raw;
            CmrNative.cmr_stream_create(out raw);
            stream = new StreamHandle(raw);
        }

        /// <summary>The stream, as the IntPtr that allocate and deallocate take.</summary>
        public IntPtr Handle
        {
            get
            {
                if (stream.IsDisposed) throw new ObjectDisposedException("CudaStream");
                return stream.DangerousGetHandle();
            }
        }

        /// <summary>Waits until the work ordered on the stream is done.</summary>
        public void Synchronize()
        {
            bool added = false;
            try
            {
                if (stream.IsDisposed) throw new ObjectDisposedException("CudaStream");
                stream.DangerousAddRef(ref added);
                CmrNative.cmr_stream_synchronize(stream.DangerousGetHandle());
            }
            finally
            {
                if (added) stream.DangerousRelease();
            }
        }

        /// <summary>Lets the stream go: it is destroyed now, or with the last buffer ordered on it. Safe to call twice.</summary>
        public void Dispose()
        {
            stream.DisposeOwner();
        }

        /// <summary>How many streams CudaStream made are not destroyed yet
        /// (not disposed, or held by a buffer).</summary>
        public static int LiveCount
        {
            get { return StreamHandle.LiveCount; }
        }
    }
}
