// SPDX-License-Identifier: Apache-2.0
using System;

namespace Cmr
{
    /// <summary>
    /// One share of a C resource, dropped when disposed or finalized: the
    /// share of a resource handle (from a create function or _from_ref),
    /// ended by the resource's own _destroy, or for a resource cmr did not
    /// make, a share taken through its ref, dropped by cmr_ref_release. As
    /// a SafeHandle it is held open by the marshaller for the length of
    /// every native call it is passed to, so disposing it on another thread
    /// cannot free the resource under a call.
    /// </summary>
    internal sealed class ResourceHandle : OwnedHandle
    {
        internal Ref Ref;

        // Ends a resource handle, by address (its cmr_cs_release_*); null
        // for a share held through Ref.
        private readonly Func<IntPtr, int> destroy;

        internal delegate void FromRefFunction(Ref shared, out IntPtr handle);

        private ResourceHandle(IntPtr raw, Func<IntPtr, int> destroy) : base(raw)
        {
            this.destroy = destroy;
        }

        /// <summary>Takes ownership of a handle a create function returned,
        /// which `destroy` ends.</summary>
        internal static ResourceHandle Own(IntPtr raw, Func<ResourceHandle, Ref> refOf, Func<IntPtr, int> destroy)
        {
            var owned = new ResourceHandle(raw, destroy);
            owned.Ref = refOf(owned);
            return owned;
        }

        /// <summary>A new handle, with a share of its own, of the resource
        /// behind a ref made elsewhere (`fromRef`: the resource's _from_ref).</summary>
        internal static ResourceHandle FromRef(Ref shared, FromRefFunction fromRef, Func<ResourceHandle, Ref> refOf,
                                               Func<IntPtr, int> destroy)
        {
            IntPtr raw;
            fromRef(shared, out raw);
            return Own(raw, refOf, destroy);
        }

        /// <summary>Takes a new share of a resource cmr did not make, through its ref.</summary>
        internal static ResourceHandle Retain(Ref shared)
        {
            CmrNative.cmr_ref_retain(shared);
            return Adopt(shared);
        }

        /// <summary>Takes over a share the caller took through `acquired`.</summary>
        internal static ResourceHandle Adopt(Ref acquired)
        {
            return new ResourceHandle(acquired.Self, null) { Ref = acquired };
        }

        protected override bool Release()
        {
            int status = destroy != null ? destroy(handle) : CmrNativePINVOKE.cmr_ref_release(Ref);
            return status == (int)Status.Success;
        }
    }
}
