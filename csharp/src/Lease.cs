// SPDX-License-Identifier: Apache-2.0
using System;

namespace Cmr
{
    /// <summary>
    /// Holds a resource's handle open while its ref is in a native call, as
    /// the marshaller does for a SafeHandle argument: a ref is two plain
    /// addresses, which would not stop another thread's Dispose.
    /// </summary>
    internal struct Lease : IDisposable
    {
        private readonly ResourceHandle handle;
        private readonly bool added;

        /// <summary>Leases `resource`, an argument named `name` (for the error).</summary>
        internal Lease(MemoryResource resource, string name)
        {
            if (resource == null) throw new ArgumentNullException(name);
            handle = resource.Handle;
            added = false;
            handle.DangerousAddRef(ref added);
        }

        internal Ref Ref
        {
            get { return handle.Ref; }
        }

        public void Dispose()
        {
            if (added) handle.DangerousRelease();
        }
    }
}
