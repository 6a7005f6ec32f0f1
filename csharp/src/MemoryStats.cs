// SPDX-License-Identifier: Apache-2.0
using System;
using System.Text;

namespace Cmr
{
    /// <summary>The fields of MemoryStats, as bits of MemoryStats.Supported.</summary>
    [Flags]
    public enum MemoryStatsFields : uint
    {
        /// <summary>No field.</summary>
        None = 0,
        /// <summary>BytesInUse is filled.</summary>
        BytesInUse = 1u << 0,
        /// <summary>BytesInUsePeak is filled.</summary>
        BytesInUsePeak = 1u << 1,
        /// <summary>BytesHeld is filled.</summary>
        BytesHeld = 1u << 2,
        /// <summary>BytesHeldPeak is filled.</summary>
        BytesHeldPeak = 1u << 3,
        /// <summary>Allocations is filled.</summary>
        Allocations = 1u << 4,
        /// <summary>Deallocations is filled.</summary>
        Deallocations = 1u << 5,
        /// <summary>BytesFree is filled.</summary>
        BytesFree = 1u << 6,
        /// <summary>FreeBlocks is filled.</summary>
        FreeBlocks = 1u << 7,
        /// <summary>LargestFreeBlock is filled.</summary>
        LargestFreeBlock = 1u << 8,
        /// <summary>OutOfMemoryCount is filled.</summary>
        OutOfMemoryCount = 1u << 9,
        /// <summary>FailureCallbackRetries is filled.</summary>
        FailureCallbackRetries = 1u << 10,
        /// <summary>Segments is filled.</summary>
        Segments = 1u << 11,
        /// <summary>StreamLists is filled.</summary>
        StreamLists = 1u << 12,
        /// <summary>PoolBytesUsed is filled.</summary>
        PoolBytesUsed = 1u << 13,
        /// <summary>PoolBytesUsedPeak is filled.</summary>
        PoolBytesUsedPeak = 1u << 14,
    }

    /// <summary>
    /// What a resource knows about its memory at one moment
    /// (MemoryResource.GetStats, C's cmr_ref_stats): an immutable value. A
    /// field the resource does not know is 0 and absent from Supported. What
    /// each field means for each kind of resource is in the API reference
    /// ("Statistics").
    /// </summary>
    public sealed class MemoryStats
    {
        internal const int Length = 16; // the supported bits, then each field

        private readonly ulong[] values;

        internal MemoryStats(ulong[] values)
        {
            if (values.Length != Length) throw new ArgumentException("cmr_ref_stats answers " + Length + " values");
            this.values = (ulong[])values.Clone();
        }

        /// <summary>The fields the resource filled.</summary>
        public MemoryStatsFields Supported { get { return (MemoryStatsFields)values[0]; } }
        /// <summary>Bytes the callers asked for and have not freed.</summary>
        public ulong BytesInUse { get { return values[1]; } }
        /// <summary>The most bytes in use at once since creation or the last peak reset.</summary>
        public ulong BytesInUsePeak { get { return values[2]; } }
        /// <summary>Bytes held from the memory below the resource, in use or free.</summary>
        public ulong BytesHeld { get { return values[3]; } }
        /// <summary>The most bytes held at once since creation or the last peak reset.</summary>
        public ulong BytesHeldPeak { get { return values[4]; } }
        /// <summary>Successful allocations since creation.</summary>
        public ulong Allocations { get { return values[5]; } }
        /// <summary>Successful deallocations since creation.</summary>
        public ulong Deallocations { get { return values[6]; } }
        /// <summary>Free bytes the resource holds.</summary>
        public ulong BytesFree { get { return values[7]; } }
        /// <summary>Free blocks the resource holds.</summary>
        public ulong FreeBlocks { get { return values[8]; } }
        /// <summary>The most one allocation could take without new memory.</summary>
        public ulong LargestFreeBlock { get { return values[9]; } }
        /// <summary>Allocations answered with out of memory.</summary>
        public ulong OutOfMemoryCount { get { return values[10]; } }
        /// <summary>Retries a failure callback asked for.</summary>
        public ulong FailureCallbackRetries { get { return values[11]; } }
        /// <summary>Pieces of memory held from below (a suballocator's chunks).</summary>
        public ulong Segments { get { return values[12]; } }
        /// <summary>Streams (and threads) with free memory lists.</summary>
        public ulong StreamLists { get { return values[13]; } }
        /// <summary>A CUDA pool's bytes in use by every user of the pool.</summary>
        public ulong PoolBytesUsed { get { return values[14]; } }
        /// <summary>The high of PoolBytesUsed.</summary>
        public ulong PoolBytesUsedPeak { get { return values[15]; } }

        /// <summary>Whether the resource filled `field`.</summary>
        public bool Has(MemoryStatsFields field)
        {
            return (Supported & field) == field;
        }

        /// <summary>Every field the resource filled, by name.</summary>
        public override string ToString()
        {
            var text = new StringBuilder("MemoryStats {");
            string separator = " ";
            for (int bit = 0; bit < Length - 1; bit++)
            {
                var field = (MemoryStatsFields)(1u << bit);
                if (!Has(field)) continue;
                text.Append(separator).Append(field).Append(" = ").Append(values[bit + 1]);
                separator = ", ";
            }
            return text.Append(" }").ToString();
        }
    }
}
