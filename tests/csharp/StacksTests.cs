// SPDX-License-Identifier: Apache-2.0
// Stack expressions and stacks of adaptors made from C#: the objects of
// the right classes, counters that see what passes through them.
using System;
using Cmr;

internal sealed class StacksTests
{
    [Test]
    private void AnExpressionGivesTypedObjects()
    {
        using (var stack = new ResourceStack("statistics(pool(system, initial_pool_size=1MiB))"))
        using (MemoryResource top = stack.Top)
        using (MemoryResource leaf = stack.Leaf)
        {
            Assert.True(top is StatisticsResourceAdaptor, "the top is a StatisticsResourceAdaptor: " + top);
            Assert.True(leaf is SystemMemoryResource, "the leaf is a SystemMemoryResource: " + leaf);
            Assert.True(((ResourceAdaptor)top).Upstream == null, "no upstream object for a stack's adaptor");
            Assert.True(stack.Expression.Contains("maximum_pool_size="), "defaults written out: " + stack.Expression);
            IntPtr ptr = top.Allocate(1000);
            Assert.Equal(1000UL, ((StatisticsResourceAdaptor)top).BytesCurrent, "counted");
            top.Deallocate(ptr, 1000);
        }
    }

    [Test]
    private void StatisticsCountersThroughAStackOfAdaptors()
    {
        using (var system = new SystemMemoryResource())
        using (var pool = new PoolMemoryResource(system, Sizes.MiB))
        using (var statistics = new StatisticsResourceAdaptor(pool))
        using (var tracking = new TrackingResourceAdaptor(statistics))
        using (var threadSafe = new ThreadSafeResourceAdaptor(tracking))
        {
            IntPtr a = threadSafe.Allocate(1000);
            IntPtr b = threadSafe.Allocate(3000);
            Assert.Equal(4000UL, statistics.BytesCurrent, "bytes current");
            Assert.Equal(2UL, statistics.AllocationsCurrent, "allocations current");
            threadSafe.Deallocate(a, 1000);
            Assert.Equal(3000UL, statistics.BytesCurrent, "after a free");
            Assert.Equal(4000UL, statistics.BytesPeak, "peak");
            Assert.Equal(4000UL, statistics.BytesTotal, "total");
            Assert.Equal(2UL, statistics.AllocationsTotal, "allocations total");
            Assert.Equal(1UL, tracking.OutstandingCount, "tracked");

            statistics.PushCounters();
            Assert.Equal(2UL, statistics.CounterLevels, "a level pushed");
            IntPtr c = threadSafe.Allocate(500);
            Assert.Equal(500UL, statistics.BytesTotal, "the new level counts from its push");
            Assert.Equal(3500UL, statistics.BytesCurrent, "current across levels");
            threadSafe.Deallocate(c, 500);
            statistics.PopCounters();
            Assert.Equal(1UL, statistics.CounterLevels, "popped");
            Assert.Equal(4500UL, statistics.BytesTotal, "the popped level merged");
            threadSafe.Deallocate(b, 3000);
            Assert.Equal(0UL, statistics.BytesCurrent, "all freed");
            Assert.True(pool.IsEqual(pool) && !pool.IsEqual(statistics), "equality by identity");
        }
    }

    [Test]
    private void PoppingTheLastLevelIsAnError()
    {
        using (var system = new SystemMemoryResource())
        using (var statistics = new StatisticsResourceAdaptor(system))
        {
            Assert.ThrowsStatus(Status.InvalidArgument, () => statistics.PopCounters(), "no level to pop");
        }
    }
}
