using System;
using System.Runtime.InteropServices;

namespace Cmr
{
    /// <summary>An owned C object at a nonzero address, released once, by
    /// Dispose or the finalizer, however many times either runs.</summary>
    public abstract class OwnedHandle : SafeHandle
    {
        internal OwnedHandle(IntPtr raw) : base(IntPtr.Zero, true)
        {
            SetHandle(raw);
        }

        public override bool IsInvalid
        {
            get { return handle == IntPtr.Zero; }
        }
    }

    /// <summary>An owned cmr_stack.</summary>
    public sealed class StackHandle : OwnedHandle
    {
        internal StackHandle(IntPtr raw) : base(raw)
        {
        }

        protected override bool ReleaseHandle()
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

        protected override bool ReleaseHandle()
        {
            return CmrNativePINVOKE.cmr_cs_release_device_buffer(handle) == (int)Status.Success;
        }
    }
}
