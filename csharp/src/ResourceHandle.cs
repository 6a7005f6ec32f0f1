using System;

namespace Cmr
{
    /// <summary>
    /// One share of a C resource: released (cmr_ref_release, which is what
    /// each resource's _destroy does) when disposed or finalized. As a
    /// SafeHandle it is held open by the marshaller for the length of every
    /// native call it is passed to, so disposing it on another thread cannot
    /// free the resource under a call.
    /// </summary>
    public sealed class ResourceHandle : OwnedHandle
    {
        internal Ref Ref;

        private ResourceHandle(IntPtr self) : base(self)
        {
        }

        /// <summary>Takes ownership of a handle a create function returned.</summary>
        internal static ResourceHandle Own(IntPtr raw, Func<ResourceHandle, Ref> refOf)
        {
            var owned = new ResourceHandle(raw);
            owned.Ref = refOf(owned);
            return owned;
        }

        /// <summary>Takes a new share of the resource behind a ref made elsewhere.</summary>
        internal static ResourceHandle Retain(Ref shared)
        {
            CmrNative.cmr_ref_retain(shared);
            return Adopt(shared);
        }

        /// <summary>Takes over a share the caller took of the resource behind `acquired`.</summary>
        internal static ResourceHandle Adopt(Ref acquired)
        {
            return new ResourceHandle(acquired.Self) { Ref = acquired };
        }

        protected override bool Release()
        {
            return CmrNativePINVOKE.cmr_ref_release(Ref) == (int)Status.Success;
        }
    }
}
