using System;

namespace Cmr
{
    /// <summary>
    /// A stream of cmr's (a cudaStream_t in CUDA builds; in the host build a
    /// token whose work is always complete), destroyed when disposed. Pass
    /// its Handle where a call takes a stream; IntPtr.Zero is the default stream.
    /// </summary>
    public sealed class CudaStream : IDisposable
    {
        private IntPtr handle;

        public CudaStream()
        {
            CmrNative.cmr_stream_create(out handle);
        }

        /// <summary>The stream, as the IntPtr that allocate and deallocate take.</summary>
        public IntPtr Handle
        {
            get
            {
                if (handle == IntPtr.Zero) throw new ObjectDisposedException("CudaStream");
                return handle;
            }
        }

        /// <summary>Waits until the work ordered on the stream is done.</summary>
        public void Synchronize()
        {
            CmrNative.cmr_stream_synchronize(Handle);
        }

        public void Dispose()
        {
            IntPtr destroyed = handle;
            handle = IntPtr.Zero;
            if (destroyed != IntPtr.Zero) CmrNative.cmr_stream_destroy(destroyed);
        }
    }
}
