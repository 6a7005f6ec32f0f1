// SPDX-License-Identifier: Apache-2.0
using System.Collections.Generic;

namespace Cmr
{
    /// <summary>
    /// The per-device resource table, shared with C and every other language
    /// (RMM's get/set_current_device_resource and per-device pair). The C
    /// table holds a share of what is set. C# keeps the object set, so that
    /// Get gives it back, and a share of its own that holds the C#
    /// callbacks the resource may call (OwnedHandle) until the C table lets
    /// go of it, even if the object set is disposed meanwhile.
    /// </summary>
    public static class DeviceResources
    {
        private sealed class Entry
        {
            internal MemoryResource Resource;
            internal ResourceHandle Holder;
        }

        private static readonly Dictionary<int, Entry> set = new Dictionary<int, Entry>();

        /// <summary>The resource for `device`: the one set, or else cmr's default
        /// (the system resource in the host build).</summary>
        public static MemoryResource Get(int device)
        {
            lock (set)
            {
                Ref found;
                // A share taken with the read: a thread replacing the entry (from C too) cannot take it away first.
                CmrNative.cmr_acquire_per_device_resource_ref(device, out found);
                Entry known;
                bool setHere = set.TryGetValue(device, out known) && known.Holder.Ref.Self == found.Self;
                if (setHere && !known.Resource.IsDisposed)
                {
                    CmrNative.cmr_ref_release(found);
                    return known.Resource;
                }
                MemoryResource shared = MemoryResource.FromAcquired(found);
                // The C# callbacks the resource calls outlive the table's hold on it with this object.
                if (setHere) shared.Handle.HoldWhatIsHeldBy(known.Holder);
                return shared;
            }
        }

        /// <summary>Makes `resource` the one for `device` (the table takes a share).</summary>
        public static void Set(int device, MemoryResource resource)
        {
            lock (set)
            {
                using (var lease = new Lease(resource, "resource"))
                {
                    CmrNative.cmr_set_per_device_resource_ref(device, lease.Ref);
                    Forget(device);
                    var holder = ResourceHandle.Retain(lease.Ref);
                    holder.HoldWhatIsHeldBy(resource.Handle);
                    set[device] = new Entry { Resource = resource, Holder = holder };
                }
            }
        }

        /// <summary>Goes back to cmr's default for `device`.</summary>
        public static void Reset(int device)
        {
            lock (set)
            {
                CmrNative.cmr_reset_per_device_resource_ref(device);
                Forget(device);
            }
        }

        /// <summary>Drops what C# kept for `device`, once the C table has let go of it.</summary>
        private static void Forget(int device)
        {
            Entry old;
            if (!set.TryGetValue(device, out old)) return;
            set.Remove(device);
            old.Holder.Dispose();
        }

        /// <summary>The current device (cmr_current_device).</summary>
        public static int CurrentDevice
        {
            get { return Results.Of<int>(CmrNative.cmr_current_device); }
        }

        /// <summary>The resource of the current device.</summary>
        public static MemoryResource Current
        {
            get { return Get(CurrentDevice); }
            set { Set(CurrentDevice, value); }
        }

        /// <summary>How many devices there are (1 in the host build).</summary>
        public static int DeviceCount
        {
            get { return Results.Of<int>(CmrNative.cmr_device_count); }
        }
    }
}
