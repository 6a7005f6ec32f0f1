using System;
using System.Runtime.InteropServices;

namespace Cmr
{
    /// <summary>An owned cmr_stack, destroyed when disposed or finalized.</summary>
    public sealed class StackHandle : SafeHandle
    {
        internal StackHandle(IntPtr raw) : base(IntPtr.Zero, true)
        {
            SetHandle(raw);
        }

        public override bool IsInvalid
        {
            get { return handle == IntPtr.Zero; }
        }

        protected override bool ReleaseHandle()
        {
            return CmrNativePINVOKE.cmr_cs_release_stack(handle) == (int)Status.Success;
        }
    }

    /// <summary>An owned cmr_device_buffer, destroyed when disposed or finalized.</summary>
    public sealed class DeviceBufferHandle : SafeHandle
    {
        internal DeviceBufferHandle(IntPtr raw) : base(IntPtr.Zero, true)
        {
            SetHandle(raw);
        }

        public override bool IsInvalid
        {
            get { return handle == IntPtr.Zero; }
        }

        protected override bool ReleaseHandle()
        {
            return CmrNativePINVOKE.cmr_cs_release_device_buffer(handle) == (int)Status.Success;
        }
    }
}
