// SPDX-License-Identifier: Apache-2.0
using System;
using System.Runtime.InteropServices;

namespace Cmr
{
    /// <summary>
    /// An untyped, resizable allocation from one resource, ordered on one
    /// stream (RMM's device_buffer, over cmr_device_buffer). The C buffer
    /// retains its resource (and its handle holds the resource's C#
    /// callbacks), so the buffer may outlive a disposed resource object;
    /// its handle holds the CudaStream it is ordered on too, so the stream
    /// is destroyed only once the buffer has freed its memory on it.
    /// </summary>
    public sealed class DeviceBuffer : IDisposable
    {
        private readonly DeviceBufferHandle owned;

        /// <summary>The handle; ObjectDisposedException naming the class once disposed.</summary>
        private DeviceBufferHandle Handle
        {
            get { return OwnedHandle.Opened(owned, "DeviceBuffer"); }
        }

        /// <summary>The alignment a buffer has unless it asks for more (256).</summary>
        public const ulong DefaultAlignment = 256;

        /// <summary>`size` uninitialised bytes from `resource` (the current
        /// device's resource if null), ordered on `stream`.</summary>
        public DeviceBuffer(ulong size, MemoryResource resource = null, IntPtr stream = default(IntPtr))
            : this(size, DefaultAlignment, resource, stream)
        {
        }

        /// <summary>The same aligned to `alignment`: a power of two the
        /// resource honours (else a CmrException, never less aligned
        /// memory), which every reallocation keeps; one below
        /// DefaultAlignment gets the default.</summary>
        public DeviceBuffer(ulong size, ulong alignment, MemoryResource resource = null, IntPtr stream = default(IntPtr))
        {
            Resource = resource ?? DeviceResources.Current;
            using (var lease = new Lease(Resource, "resource"))
            {
                owned = DeviceBufferHandle.Create(stream, () =>
                {
                    IntPtr raw;
                    CmrNative.cmr_device_buffer_create_aligned(size, alignment, stream, lease.Ref, out raw);
                    return raw;
                });
                Handle.HoldWhatIsHeldBy(Resource.Handle);
            }
        }

        /// <summary>A buffer holding a copy of `source`, from `resource` (the
        /// current device's if null), ordered on `stream`.</summary>
        public DeviceBuffer(byte[] source, MemoryResource resource = null, IntPtr stream = default(IntPtr))
            : this(source, DefaultAlignment, resource, stream)
        {
        }

        /// <summary>The same aligned as DeviceBuffer(ulong, ulong, ...) says.</summary>
        public DeviceBuffer(byte[] source, ulong alignment, MemoryResource resource = null,
                            IntPtr stream = default(IntPtr))
        {
            if (source == null) throw new ArgumentNullException("source");
            Resource = resource ?? DeviceResources.Current;
            using (var lease = new Lease(Resource, "resource"))
            {
                owned = DeviceBufferHandle.Create(stream, () =>
                {
                    IntPtr raw = IntPtr.Zero;
                    Pinned(source, address =>
                        CmrNative.cmr_device_buffer_create_copy_aligned(address, (ulong)source.Length, alignment, stream,
                                                                        lease.Ref, out raw));
                    return raw;
                });
                Handle.HoldWhatIsHeldBy(Resource.Handle);
            }
        }

        /// <summary>The resource object the buffer allocates from.</summary>
        public MemoryResource Resource { get; private set; }

        /// <summary>The address of the first byte (IntPtr.Zero when the capacity is 0).</summary>
        public IntPtr Data
        {
            get { return Results.Of<DeviceBufferHandle, IntPtr>(CmrNative.cmr_device_buffer_data, Handle); }
        }

        /// <summary>The bytes the buffer holds.</summary>
        public ulong Size
        {
            get { return Results.Of<DeviceBufferHandle, ulong>(CmrNative.cmr_device_buffer_size, Handle); }
        }

        /// <summary>Bytes allocated, at least the size.</summary>
        public ulong Capacity
        {
            get { return Results.Of<DeviceBufferHandle, ulong>(CmrNative.cmr_device_buffer_capacity, Handle); }
        }

        /// <summary>The alignment of the buffer's memory, which each of its
        /// allocations asks for (at least DefaultAlignment).</summary>
        public ulong Alignment
        {
            get { return Results.Of<DeviceBufferHandle, ulong>(CmrNative.cmr_device_buffer_alignment, Handle); }
        }

        /// <summary>The stream later work and the final free are ordered on.</summary>
        public IntPtr Stream
        {
            get { return Results.Of<DeviceBufferHandle, IntPtr>(CmrNative.cmr_device_buffer_stream, Handle); }
            set { Handle.OrderOn(value, () => CmrNative.cmr_device_buffer_set_stream(Handle, value)); }
        }

        /// <summary>Changes the size, keeping the first min(Size, newSize)
        /// bytes; reallocates only past the capacity.</summary>
        public void Resize(ulong newSize, IntPtr stream = default(IntPtr))
        {
            Handle.OrderOn(stream, () => CmrNative.cmr_device_buffer_resize(Handle, newSize, stream));
        }

        /// <summary>Makes the capacity at least `newCapacity`, keeping the contents.</summary>
        public void Reserve(ulong newCapacity, IntPtr stream = default(IntPtr))
        {
            Handle.OrderOn(stream, () => CmrNative.cmr_device_buffer_reserve(Handle, newCapacity, stream));
        }

        /// <summary>Makes the capacity equal to the size, keeping the contents.</summary>
        public void ShrinkToFit(IntPtr stream = default(IntPtr))
        {
            Handle.OrderOn(stream, () => CmrNative.cmr_device_buffer_shrink_to_fit(Handle, stream));
        }

        /// <summary>Migrates managed memory to `device` (the current one if
        /// negative); other memory stays where it is.</summary>
        public void Prefetch(int device = -1, IntPtr stream = default(IntPtr))
        {
            CmrNative.cmr_device_buffer_prefetch(Handle, device, stream);
        }

        /// <summary>The contents, copied to a new array (waits for the copy).</summary>
        public byte[] ToArray()
        {
            var bytes = new byte[checked((int)Size)];
            CopyTo(bytes);
            return bytes;
        }

        /// <summary>Copies the first destination.Length bytes (at most Size) into `destination`.</summary>
        public void CopyTo(byte[] destination)
        {
            if (destination == null) throw new ArgumentNullException("destination");
            Pinned(destination, address =>
                CmrNative.cmr_device_buffer_copy_to_host(Handle, address, (ulong)destination.Length));
        }

        /// <summary>Copies `source` (at most Size bytes) to the start of the
        /// buffer, ordered on the buffer's stream.</summary>
        public void CopyFrom(byte[] source)
        {
            if (source == null) throw new ArgumentNullException("source");
            Pinned(source, address => CmrNative.cmr_device_buffer_copy_from(Handle, address, (ulong)source.Length));
        }

        /// <summary>Frees the memory on the buffer's stream and drops its
        /// shares of the resource and of the stream.</summary>
        public void Dispose()
        {
            owned.Dispose();
        }

        /// <summary>Runs `use` with the address of `bytes`, which the GC may not move meanwhile.</summary>
        private static void Pinned(byte[] bytes, Action<IntPtr> use)
        {
            GCHandle pin = GCHandle.Alloc(bytes, GCHandleType.Pinned);
            try
            {
                use(pin.AddrOfPinnedObject());
            }
            finally
            {
                pin.Free();
            }
        }
    }
}
