using System;
using System.Collections.Concurrent;

namespace Cmr
{
    /// <summary>
    /// What MemoryResource.Allocate handed out and Deallocate has not taken
    /// back, over every resource: keyed by the C resource too, since a
    /// resource may hand out an address its upstream handed out to it, and
    /// two C# objects may hold shares of one C resource.
    /// </summary>
    internal static class Outstanding
    {
        private struct Block : IEquatable<Block>
        {
            internal IntPtr Resource;
            internal IntPtr Ptr;

            public bool Equals(Block other)
            {
                return Resource == other.Resource && Ptr == other.Ptr;
            }

            public override bool Equals(object other)
            {
                return other is Block && Equals((Block)other);
            }

            public override int GetHashCode()
            {
                return Ptr.GetHashCode() * 31 + Resource.GetHashCode();
            }
        }

        private static readonly ConcurrentDictionary<Block, ulong> blocks = new ConcurrentDictionary<Block, ulong>();

        internal static void Add(Ref resource, IntPtr ptr, ulong bytes)
        {
            if (ptr != IntPtr.Zero) blocks[new Block { Resource = resource.Self, Ptr = ptr }] = bytes;
        }

        /// <summary>Takes a block out before it is freed (so that a second
        /// thread freeing it finds nothing), or throws if it is not one this
        /// resource handed out with that size.</summary>
        internal static void Take(Ref resource, IntPtr ptr, ulong bytes)
        {
            if (ptr == IntPtr.Zero) return;
            var block = new Block { Resource = resource.Self, Ptr = ptr };
            ulong allocated;
            if (!blocks.TryRemove(block, out allocated))
            {
                throw new CmrException(Status.UnknownPointer, string.Format(
                    "0x{0:x} was not allocated by this resource's Allocate, or was freed already", ptr.ToInt64()));
            }
            if (allocated != bytes)
            {
                blocks[block] = allocated;
                throw new CmrException(Status.InvalidArgument, string.Format(
                    "0x{0:x} was allocated with {1} bytes, not {2}", ptr.ToInt64(), allocated, bytes));
            }
        }
    }
}
