// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Cmr
{
    /// <summary>
    /// An owned C object at a nonzero address, released once, by Dispose or
    /// the finalizer, however many times either runs.
    ///
    /// It holds the C# callbacks its C object may call, directly or through
    /// the resources it retains, until it has released the C object: a C
    /// object goes, calling its upstreams one last time (a pool gives its
    /// chunks back), at the release of the last handle that holds it. Held
    /// callbacks are pinned (NativeCallback.Hold), so that neither the
    /// garbage collector nor the order of finalizers can take them away first.
    /// </summary>
    internal abstract class OwnedHandle : SafeHandle
    {
        private readonly List<NativeCallback> held = new List<NativeCallback>();

        internal OwnedHandle(IntPtr raw) : base(IntPtr.Zero, true)
        {
            SetHandle(raw);
        }

        public override bool IsInvalid
        {
            get { return handle == IntPtr.Zero; }
        }

        /// <summary>
        /// The handle, or ObjectDisposedException naming `owner` (the C# object's class) once
        /// disposed. (A disposal racing the call is still caught by the marshaller, which holds the
        /// handle open for each call, with its own ObjectDisposedException.)
        /// </summary>
        internal static T Opened<T>(T handle, string owner) where T : OwnedHandle
        {
            if (handle.IsClosed) throw new ObjectDisposedException(owner, owner + " is disposed");
            return handle;
        }

        /// <summary>Holds `callback` until this handle is released.</summary>
        internal void Hold(NativeCallback callback)
        {
            callback.Hold();
            lock (held) held.Add(callback);
        }

        /// <summary>Holds every callback `other` holds (a resource this handle's C object now retains).</summary>
        internal void HoldWhatIsHeldBy(OwnedHandle other)
        {
            NativeCallback[] theirs;
            lock (other.held) theirs = other.held.ToArray();
            foreach (NativeCallback callback in theirs) Hold(callback);
        }

        /// <summary>Releases the C object.</summary>
        protected abstract bool Release();

        protected sealed override bool ReleaseHandle()
        {
            bool released = Release();
            lock (held)
            {
                foreach (NativeCallback callback in held) callback.LetGo();
                held.Clear();
            }
            return released;
        }
    }

    /// <summary>An owned cmr_stack.</summary>
    internal sealed class StackHandle : OwnedHandle
    {
        internal StackHandle(IntPtr raw) : base(raw)
        {
        }

        protected override bool Release()
        {
            return CmrNativePINVOKE.cmr_cs_release_stack(handle) == (int)Status.Success;
        }
    }

    /// <summary>An owned cmr_stream_pool.</summary>
    internal sealed class StreamPoolHandle : OwnedHandle
    {
        internal StreamPoolHandle(IntPtr raw) : base(raw)
        {
        }

        protected override bool Release()
        {
            return CmrNativePINVOKE.cmr_cs_release_stream_pool(handle) == (int)Status.Success;
        }
    }

    /// <summary>An owned cmr_device_buffer, and the CudaStream it is
    /// ordered on (if one is), which it keeps until it has freed its memory
    /// on it, as RMM's buffer keeps its stream.</summary>
    internal sealed class DeviceBufferHandle : OwnedHandle
    {
        private StreamHandle stream; // held by DangerousAddRef; null: a stream CudaStream did not make

        internal DeviceBufferHandle(IntPtr raw, StreamHandle stream) : base(raw)
        {
            this.stream = stream;
        }

        /// <summary>A buffer that `create` makes, ordered on the stream at
        /// `address`, which is held first so that it cannot go meanwhile.</summary>
        internal static DeviceBufferHandle Create(IntPtr address, Func<IntPtr> create)
        {
            StreamHandle held = StreamHandle.Hold(address);
            try
            {
                return new DeviceBufferHandle(create(), held);
            }
            catch
            {
                if (held != null) held.DangerousRelease();
                throw;
            }
        }

        /// <summary>Runs `call`, which orders the buffer on the stream at
        /// `address` from then on, moving the hold to that stream.</summary>
        internal void OrderOn(IntPtr address, Action call)
        {
            StreamHandle current;
            lock (this) current = stream;
            if (current != null && current.DangerousGetHandle() == address)
            {
                call(); // the stream held already (its CudaStream may be disposed)
                return;
            }
            StreamHandle next = StreamHandle.Hold(address);
            try
            {
                call();
            }
            catch
            {
                if (next != null) next.DangerousRelease();
                throw;
            }
            OrderedOn(next);
        }

        /// <summary>The buffer is ordered on `next` now (held already, or
        /// null): the stream held so far is let go.</summary>
        private void OrderedOn(StreamHandle next)
        {
            StreamHandle previous;
            lock (this)
            {
                previous = stream;
                stream = next;
            }
            if (previous != null) previous.DangerousRelease();
        }

        protected override bool Release()
        {
            bool released = CmrNativePINVOKE.cmr_cs_release_device_buffer(handle) == (int)Status.Success;
            OrderedOn(null);
            return released;
        }
    }

    /// <summary>An owned cmr_stream. A buffer ordered on it holds it
    /// (DangerousAddRef), so it is destroyed with the last of its owner
    /// (the CudaStream) and the buffers, in whatever order they go.</summary>
    internal sealed class StreamHandle : OwnedHandle
    {
        // The streams CudaStream made and cmr has not destroyed, by address.
        private static readonly Dictionary<IntPtr, WeakReference<StreamHandle>> live =
            new Dictionary<IntPtr, WeakReference<StreamHandle>>();

        // Set when its CudaStream is disposed: a SafeHandle a buffer still
        // holds does not count as closed, but the stream is its creator's no more.
        private volatile bool disposed;

        internal StreamHandle(IntPtr raw) : base(raw)
        {
            lock (live) live[raw] = new WeakReference<StreamHandle>(this);
        }

        /// <summary>Whether its CudaStream was disposed (the stream may live on in a buffer).</summary>
        internal bool IsDisposed
        {
            get { return disposed || IsClosed; }
        }

        /// <summary>Gives back the CudaStream's hold: the stream goes now, or with the last buffer on it.</summary>
        internal void DisposeOwner()
        {
            disposed = true;
            Dispose();
        }

        /// <summary>How many streams CudaStream made are not destroyed yet.</summary>
        internal static int LiveCount
        {
            get { lock (live) return live.Count; }
        }

        /// <summary>Holds the stream at `address` for a buffer ordered on it:
        /// its handle, or null for a stream CudaStream did not make (the
        /// default one, one made elsewhere). A disposed CudaStream's is
        /// ObjectDisposedException, even while a buffer still holds it.</summary>
        internal static StreamHandle Hold(IntPtr address)
        {
            StreamHandle found;
            lock (live)
            {
                WeakReference<StreamHandle> weak;
                if (!live.TryGetValue(address, out weak) || !weak.TryGetTarget(out found)) return null;
            }
            if (found.IsDisposed) throw new ObjectDisposedException("CudaStream");
            bool added = false;
            found.DangerousAddRef(ref added);
            return found;
        }

        protected override bool Release()
        {
            lock (live) live.Remove(handle);
            return CmrNativePINVOKE.cmr_stream_destroy(handle) == (int)Status.Success;
        }
    }
}
