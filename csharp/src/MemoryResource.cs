// SPDX-License-Identifier: Apache-2.0
using System;

namespace Cmr
{
    /// <summary>
    /// A memory resource: allocates and frees memory, stream-ordered (RMM's
    /// device_memory_resource). Each object holds one share of its C
    /// resource and releases it when disposed (or, failing that, when
    /// finalized); the C resources retain what they are made over, so
    /// objects may be disposed in any order. Using a disposed object throws
    /// ObjectDisposedException.
    ///
    /// Allocate and Deallocate remember what they handed out, so that freeing
    /// an address twice, one this resource did not allocate, or with another
    /// size is a CmrException (UnknownPointer, InvalidArgument) before it
    /// reaches C, where some resources (the system's free) could not tell.
    /// </summary>
    public class MemoryResource : IDisposable
    {
        /// <summary>For a generated class, which calls Own once it has made its handle.</summary>
        protected MemoryResource()
        {
        }

        internal MemoryResource(ResourceHandle handle)
        {
            owned = handle;
        }

        private ResourceHandle owned;

        /// <summary>The handle; ObjectDisposedException naming the class once disposed.</summary>
        internal ResourceHandle Handle
        {
            get { return OwnedHandle.Opened(owned, GetType().Name); }
        }

        /// <summary>An object of the resource's class holding a share of its
        /// own of a resource made elsewhere (a stack's, a buffer's).</summary>
        internal static MemoryResource FromShared(Ref shared)
        {
            return ResourceTypes.Of(shared, false);
        }

        /// <summary>As FromShared, giving back the share the caller took (cmr_acquire_*).</summary>
        internal static MemoryResource FromAcquired(Ref acquired)
        {
            return ResourceTypes.Of(acquired, true);
        }

        /// <summary>Takes the handle this object was made with, holding the
        /// callbacks its C resource calls and those of the resources it retains.</summary>
        internal void Own(ResourceHandle handle, params object[] dependencies)
        {
            owned = handle;
            foreach (object dependency in dependencies)
            {
                var callback = dependency as NativeCallback;
                if (callback != null) Handle.Hold(callback);
                else Keep((MemoryResource)dependency);
            }
        }

        /// <summary>Holds the callbacks of a resource the C resource now retains.</summary>
        internal void Keep(MemoryResource retained)
        {
            Handle.HoldWhatIsHeldBy(retained.Handle);
        }

        /// <summary>Whether Dispose has run.</summary>
        public bool IsDisposed
        {
            get { return owned.IsClosed; }
        }

        /// <summary>The resource's kind, as the spec names it ("pool", "system", ...).</summary>
        public string TypeName
        {
            get
            {
                using (var self = new Lease(this, "this"))
                {
                    string name;
                    CmrNative.cmr_ref_type_name(self.Ref, out name);
                    return name;
                }
            }
        }

        /// <summary>What the memory is accessible from.</summary>
        public ResourceProperties Properties
        {
            get
            {
                using (var self = new Lease(this, "this"))
                {
                    uint mask;
                    CmrNative.cmr_ref_properties(self.Ref, out mask);
                    return (ResourceProperties)mask;
                }
            }
        }

        /// <summary>Allocates `bytes` (0 gives IntPtr.Zero) at the default
        /// alignment (256), ordered on `stream` (the default stream if omitted).</summary>
        public IntPtr Allocate(ulong bytes, IntPtr stream = default(IntPtr))
        {
            using (var self = new Lease(this, "this"))
            {
                IntPtr ptr;
                CmrNative.cmr_allocate(self.Ref, bytes, stream, out ptr);
                Outstanding.Add(self.Ref, ptr, bytes);
                return ptr;
            }
        }

        /// <summary>Allocates `bytes` at a power-of-two `alignment`, ordered on
        /// `stream`. An alignment the resource cannot honour is a CmrException
        /// (UnsupportedAlignment), never a less aligned address.</summary>
        public IntPtr Allocate(ulong bytes, ulong alignment, IntPtr stream = default(IntPtr))
        {
            using (var self = new Lease(this, "this"))
            {
                IntPtr ptr;
                CmrNative.cmr_allocate_aligned(self.Ref, bytes, alignment, stream, out ptr);
                Outstanding.Add(self.Ref, ptr, bytes);
                return ptr;
            }
        }

        /// <summary>Frees `bytes` at `ptr` (IntPtr.Zero does nothing), which
        /// Allocate of this resource returned, ordered on `stream`.</summary>
        public void Deallocate(IntPtr ptr, ulong bytes, IntPtr stream = default(IntPtr))
        {
            using (var self = new Lease(this, "this"))
            {
                Outstanding.Take(self.Ref, ptr, bytes);
                try
                {
                    CmrNative.cmr_deallocate(self.Ref, ptr, bytes, stream);
                }
                catch
                {
                    Outstanding.Add(self.Ref, ptr, bytes);
                    throw;
                }
                NativeCallback.RethrowPending();
            }
        }

        /// <summary>Frees memory from Allocate(bytes, alignment, stream), with the same alignment.</summary>
        public void Deallocate(IntPtr ptr, ulong bytes, ulong alignment, IntPtr stream = default(IntPtr))
        {
            using (var self = new Lease(this, "this"))
            {
                Outstanding.Take(self.Ref, ptr, bytes);
                try
                {
                    CmrNative.cmr_deallocate_aligned(self.Ref, ptr, bytes, alignment, stream);
                }
                catch
                {
                    Outstanding.Add(self.Ref, ptr, bytes);
                    throw;
                }
                NativeCallback.RethrowPending();
            }
        }

        /// <summary>Whether memory from one can be freed by the other.</summary>
        public bool IsEqual(MemoryResource other)
        {
            using (var self = new Lease(this, "this"))
            using (var that = new Lease(other, "other"))
            {
                bool equal;
                CmrNative.cmr_ref_equal(self.Ref, that.Ref, out equal);
                return equal;
            }
        }

        /// <summary>Releases this object's share of the C resource (the resource
        /// goes when its last holder, C or C#, lets go). Safe to call twice.</summary>
        public void Dispose()
        {
            owned.Dispose();
        }

        /// <summary>The class and the resource's name in the spec, e.g. "PoolMemoryResource pool".</summary>
        public override string ToString()
        {
            return IsDisposed ? GetType().Name + " (disposed)" : GetType().Name + " " + TypeName;
        }
    }

    /// <summary>A resource over another one, its upstream (RMM's upstream_resource_adaptor).</summary>
    public abstract class ResourceAdaptor : MemoryResource
    {
        /// <summary>For a generated class, which calls Own once it has made its handle.</summary>
        protected ResourceAdaptor()
        {
        }

        internal ResourceAdaptor(ResourceHandle handle) : base(handle)
        {
        }

        /// <summary>The upstream object this adaptor was made over (null for
        /// one made outside C#: by a stack expression or found in the per-device table).</summary>
        public MemoryResource Upstream { get; internal set; }
    }
}
