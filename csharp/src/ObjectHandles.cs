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
    public abstract class OwnedHandle : SafeHandle
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
    public sealed class StackHandle : OwnedHandle
    {
        internal StackHandle(IntPtr raw) : base(raw)
        {
        }

        protected override bool Release()
        {
            return CmrNativePINVOKE.cmr_cs_release_stack(handle) == (int)Status.Success;
        }
    }

    /// <summary>An owned cmr_device_buffer.</summary>
    public sealed class DeviceBufferHandle : OwnedHandle
    {
        internal DeviceBufferHandle(IntPtr raw) : base(raw)
        {
        }

        protected override bool Release()
        {
            return CmrNativePINVOKE.cmr_cs_release_device_buffer(handle) == (int)Status.Success;
        }
    }

    /// <summary>An owned cmr_stream.</summary>
    public sealed class StreamHandle : OwnedHandle
    {
        internal StreamHandle(IntPtr raw) : base(raw)
        {
        }

        protected override bool Release()
        {
            return CmrNativePINVOKE.cmr_stream_destroy(handle) == (int)Status.Success;
        }
    }
}
