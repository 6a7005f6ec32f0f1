// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Threading;

namespace Cmr
{
    /// <summary>
    /// What MemoryResource.Allocate handed out and Deallocate has not taken
    /// back, over every resource: keyed by the C resource too, since a
    /// resource may hand out an address its upstream handed out to it, and
    /// two C# objects may hold shares of one C resource. The table is split
    /// by address into stripes, each under its own lock, so that threads
    /// allocating at once seldom wait for each other (Mono's
    /// ConcurrentDictionary cost more than the C allocation itself).
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

        /// <summary>A part of the table, under a lock of its own: a flag
        /// taken by compare-and-swap (Mono's Monitor costs ten times as
        /// much), waited for by spinning, as it is held only for one lookup.</summary>
        private sealed class Stripe
        {
            internal readonly Dictionary<Block, ulong> Blocks = new Dictionary<Block, ulong>();
            private int busy;

            internal void Enter()
            {
                if (Interlocked.CompareExchange(ref busy, 1, 0) == 0) return;
                var wait = new SpinWait();
                while (Interlocked.CompareExchange(ref busy, 1, 0) != 0) wait.SpinOnce();
            }

            internal void Exit()
            {
                Volatile.Write(ref busy, 0);
            }
        }

        private const int StripeCount = 64; // a power of two
        private static readonly Stripe[] stripes = MakeStripes();

        private static Stripe[] MakeStripes()
        {
            var made = new Stripe[StripeCount];
            for (int i = 0; i < StripeCount; i++) made[i] = new Stripe();
            return made;
        }

        /// <summary>The stripe of an address: blocks are mostly 256-aligned,
        /// so the bits above those choose it.</summary>
        private static Stripe StripeOf(IntPtr ptr)
        {
            return stripes[(int)((ulong)ptr.ToInt64() >> 8) & (StripeCount - 1)];
        }

        internal static void Add(Ref resource, IntPtr ptr, ulong bytes)
        {
            if (ptr == IntPtr.Zero) return;
            Stripe stripe = StripeOf(ptr);
            stripe.Enter();
            try
            {
                stripe.Blocks[new Block { Resource = resource.Self, Ptr = ptr }] = bytes;
            }
            finally
            {
                stripe.Exit();
            }
        }

        /// <summary>Takes a block out before it is freed (so that a second
        /// thread freeing it finds nothing), or throws if it is not one this
        /// resource handed out with that size.</summary>
        internal static void Take(Ref resource, IntPtr ptr, ulong bytes)
        {
            if (ptr == IntPtr.Zero) return;
            var block = new Block { Resource = resource.Self, Ptr = ptr };
            Stripe stripe = StripeOf(ptr);
            ulong allocated;
            bool found;
            stripe.Enter();
            try
            {
                found = stripe.Blocks.Remove(block, out allocated);
                if (found && allocated != bytes) stripe.Blocks[block] = allocated;
            }
            finally
            {
                stripe.Exit();
            }
            if (!found)
            {
                throw new CmrArgumentException(Status.UnknownPointer, string.Format(
                    "0x{0:x} was not allocated by this resource's Allocate, or was freed already", ptr.ToInt64()));
            }
            if (allocated != bytes)
            {
                throw new CmrArgumentException(Status.InvalidArgument, string.Format(
                    "0x{0:x} was allocated with {1} bytes, not {2}", ptr.ToInt64(), allocated, bytes));
            }
        }
    }
}
