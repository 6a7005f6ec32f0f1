using System.Collections.Generic;

namespace Cmr
{
    /// <summary>
    /// The per-device resource table, shared with C and every other language
    /// (RMM's get/set_current_device_resource and per-device pair). The
    /// table holds a share of what is set; the objects set from C# are kept
    /// here too, so that the C# callbacks a resource calls stay alive while
    /// the table can call them, and Get gives back the object that was set.
    /// </summary>
    public static class DeviceResources
    {
        private static readonly Dictionary<int, MemoryResource> set = new Dictionary<int, MemoryResource>();

        /// <summary>The resource for `device`: the one set, or else cmr's default
        /// (the system resource in the host build).</summary>
        public static MemoryResource Get(int device)
        {
            lock (set)
            {
                Ref found;
                CmrNative.cmr_get_per_device_resource_ref(device, out found);
                MemoryResource known;
                if (set.TryGetValue(device, out known) && !known.IsDisposed && known.Handle.Ref.Self == found.Self)
                {
                    return known;
                }
                return MemoryResource.FromShared(found);
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
                }
                set[device] = resource;
            }
        }

        /// <summary>Goes back to cmr's default for `device`.</summary>
        public static void Reset(int device)
        {
            lock (set)
            {
                CmrNative.cmr_reset_per_device_resource_ref(device);
                set.Remove(device);
            }
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
