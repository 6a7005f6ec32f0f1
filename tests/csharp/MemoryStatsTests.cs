// SPDX-License-Identifier: Apache-2.0
// MemoryResource.GetStats, ResetPeakStats and the out-of-memory observer, from C#.
using System;
using System.Collections.Generic;
using Cmr;

internal sealed class MemoryStatsTests
{
    private const ulong MiB = 1 << 20;

    [Test]
    private void APoolReportsItsUseAndItsFreeMemory()
    {
        using (var system = new SystemMemoryResource())
        using (var pool = new PoolMemoryResource(system, MiB, MiB))
        {
            IntPtr a = pool.Allocate(1000);
            IntPtr b = pool.Allocate(3000);
            pool.Deallocate(a, 1000);
            MemoryStats stats = pool.GetStats();
            Assert.Equal(3000UL, stats.BytesInUse, "bytes in use");
            Assert.Equal(4000UL, stats.BytesInUsePeak, "peak");
            Assert.Equal(MiB, stats.BytesHeld, "held");
            Assert.Equal(2UL, stats.Allocations, "allocations");
            Assert.Equal(1UL, stats.Deallocations, "deallocations");
            Assert.Equal(MiB - 4096, stats.LargestFreeBlock, "largest free block");
            Assert.Equal(2UL, stats.FreeBlocks, "free blocks");
            Assert.True(stats.Has(MemoryStatsFields.LargestFreeBlock), "the pool knows its free blocks");
            Assert.True(!stats.Has(MemoryStatsFields.PoolBytesUsed), "it has no driver pool");
            pool.ResetPeakStats();
            Assert.Equal(3000UL, pool.GetStats().BytesInUsePeak, "peak after the reset");
            pool.Deallocate(b, 3000);
            Assert.Equal(0UL, pool.GetStats().BytesInUse, "all freed");
        }
    }

    [Test]
    private void TheObserverIsToldOnceBeforeTheException()
    {
        var events = new List<OutOfMemoryEvent>();
        Exception nested = null;
        using (var system = new SystemMemoryResource())
        using (var pool = new PoolMemoryResource(system, MiB, MiB))
        using (var counted = new StatisticsResourceAdaptor(pool))
        {
            OutOfMemoryObserver.Set(e =>
            {
                events.Add(e);
                try { OutOfMemoryObserver.Set(null); } catch (InvalidOperationException refused) { nested = refused; }
            });
            try
            {
                var error = Assert.Throws<CmrOutOfMemoryException>(() => counted.Allocate(2 * MiB), "past the maximum");
                Assert.Equal(1, events.Count, "one event");
                OutOfMemoryEvent seen = events[0];
                Assert.True(seen.IsFrom(pool) && !seen.IsFrom(counted), "the pool ran out");
                Assert.Equal("pool", seen.ResourceType, "its kind");
                Assert.Equal(2 * MiB, seen.Bytes, "the request");
                Assert.Equal(MiB, seen.Stats.BytesHeld, "its stats");
                Assert.True(seen.Message.Contains("free by stream"), "the message describes it");
                Assert.True(error.Message.Contains(seen.Message), "the caller's message");
                Assert.True(nested != null, "setting the observer from inside it is refused");
                Assert.Equal(1UL, counted.GetStats().OutOfMemoryCount, "counted by the adaptor too");
            }
            finally
            {
                OutOfMemoryObserver.Set(null);
            }
            Assert.Throws<CmrOutOfMemoryException>(() => counted.Allocate(2 * MiB), "with no observer");
            Assert.Equal(1, events.Count, "no event without an observer");
        }
    }

    [Test]
    private void WhatTheObserverThrowsComesOutOfTheCall()
    {
        using (var system = new SystemMemoryResource())
        using (var pool = new PoolMemoryResource(system, MiB, MiB))
        {
            OutOfMemoryObserver.Set(e => { throw new FormatException("the observer broke"); });
            try
            {
                var e = Assert.Throws<FormatException>(() => pool.Allocate(2 * MiB), "the observer's exception");
                Assert.Equal("the observer broke", e.Message, "its message");
            }
            finally
            {
                OutOfMemoryObserver.Set(null);
            }
        }
    }
}
