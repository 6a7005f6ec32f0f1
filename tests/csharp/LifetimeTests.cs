// SPDX-License-Identifier: Apache-2.0
// Disposing in every order (upstreams before their adaptors included) and
// leaving objects to the finalizer: nothing crashes, and the statistics
// adaptor at the bottom of each stack sees every byte come back.
using System;
using System.Collections.Generic;
using System.Linq;
using Cmr;

internal sealed class LifetimeTests
{
    internal static IEnumerable<int[]> Permutations(int[] items)
    {
        if (items.Length <= 1) return new[] { items };
        return items.SelectMany((item, i) =>
            Permutations(items.Where((_, j) => j != i).ToArray()).Select(rest => new[] { item }.Concat(rest).ToArray()));
    }

    private static void Empty(StatisticsResourceAdaptor bottom, string what)
    {
        Assert.Equal(0UL, bottom.BytesCurrent, what + ": bytes outstanding at the bottom");
        Assert.Equal(0UL, bottom.AllocationsCurrent, what + ": allocations outstanding at the bottom");
    }

    [Test]
    private void EveryDisposalOrderGivesEverythingBack()
    {
        foreach (int[] order in Permutations(new[] { 0, 1, 2 }))
        {
            string what = "order " + string.Join(",", order);
            using (var system = new SystemMemoryResource())
            using (var bottom = new StatisticsResourceAdaptor(system))
            {
                var limiting = new LimitingResourceAdaptor(bottom, 64 * Sizes.MiB);
                var pool = new PoolMemoryResource(limiting, Sizes.MiB);
                var top = new TrackingResourceAdaptor(pool);
                var layers = new MemoryResource[] { limiting, pool, top };
                IntPtr ptr = top.Allocate(5000);
                Assert.True(bottom.BytesCurrent >= Sizes.MiB, what + ": the pool's chunk taken from the bottom");
                foreach (int i in order.Take(2)) layers[i].Dispose();
                // The top may be gone by now; whatever is still usable still works.
                MemoryResource alive = layers[order[2]];
                IntPtr more = alive.Allocate(100);
                alive.Deallocate(more, 100);
                if (alive == top) top.Deallocate(ptr, 5000);
                alive.Dispose();
                Empty(bottom, what);
            }
        }
    }

    [Test]
    private void AnUpstreamDisposedFirstStillServesItsAdaptor()
    {
        using (var system = new SystemMemoryResource())
        using (var bottom = new StatisticsResourceAdaptor(system))
        {
            var pool = new PoolMemoryResource(bottom, 0);
            var statistics = new StatisticsResourceAdaptor(pool);
            pool.Dispose();
            Assert.True(pool.IsDisposed, "the upstream object is disposed");
            IntPtr ptr = statistics.Allocate(Sizes.MiB);
            Assert.True(bottom.BytesCurrent >= Sizes.MiB, "the pool, kept by the adaptor, took memory");
            statistics.Deallocate(ptr, Sizes.MiB);
            statistics.Dispose();
            Empty(bottom, "adaptor disposed after its upstream");
        }
    }

    [Test]
    private void DisposingTwiceIsHarmless()
    {
        var system = new SystemMemoryResource();
        system.Dispose();
        system.Dispose();
        Assert.True(system.IsDisposed, "disposed");
    }

    [Test]
    private void ADisposedResourceRefusesEveryUse()
    {
        var system = new SystemMemoryResource();
        var pool = new PoolMemoryResource(system, Sizes.MiB);
        pool.Dispose();
        Assert.Throws<ObjectDisposedException>(() => pool.Allocate(10), "allocate");
        Assert.Throws<ObjectDisposedException>(() => pool.Deallocate(new IntPtr(4096), 10), "deallocate");
        Assert.Throws<ObjectDisposedException>(() => { var size = pool.PoolSize; }, "a typed property");
        Assert.Throws<ObjectDisposedException>(() => new StatisticsResourceAdaptor(pool), "as an upstream");
        Assert.Throws<ObjectDisposedException>(() => system.IsEqual(pool), "as the other of IsEqual");
        Assert.Equal("PoolMemoryResource (disposed)", pool.ToString(), "shown as disposed");
        system.Dispose();
    }

    [Test]
    private void TheFinalizerReleasesWhatWasNotDisposed()
    {
        using (var system = new SystemMemoryResource())
        using (var bottom = new StatisticsResourceAdaptor(system))
        {
            MakeAndDrop(bottom);
            Finalizers.Run();
            Empty(bottom, "after the finalizers");
        }
    }

    // Not inlined into the test, so that nothing of it stays reachable from its frame.
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static void MakeAndDrop(MemoryResource upstream)
    {
        var pool = new PoolMemoryResource(upstream, Sizes.MiB);
        var statistics = new StatisticsResourceAdaptor(pool);
        IntPtr ptr = statistics.Allocate(1000);
        statistics.Deallocate(ptr, 1000);
    }

    [Test]
    private void ABufferOutlivesItsResourceObject()
    {
        using (var system = new SystemMemoryResource())
        using (var bottom = new StatisticsResourceAdaptor(system))
        {
            var pool = new PoolMemoryResource(bottom, Sizes.MiB);
            var buffer = new DeviceBuffer(new byte[] { 1, 2, 3 }, pool);
            pool.Dispose();
            buffer.Resize(3 * Sizes.MiB);
            Assert.Equal((byte)3, buffer.ToArray()[2], "the contents kept across the resize");
            buffer.Dispose();
            Empty(bottom, "buffer disposed after its resource");
        }
    }

    [Test]
    private void AStackTopOutlivesItsStack()
    {
        MemoryResource top;
        using (var stack = new ResourceStack("statistics(pool(system, initial_pool_size=1MiB))"))
        {
            top = stack.Top;
        }
        IntPtr ptr = top.Allocate(1000);
        var statistics = (StatisticsResourceAdaptor)top;
        Assert.Equal(1000UL, statistics.BytesCurrent, "counted after the stack's Dispose");
        top.Deallocate(ptr, 1000);
        top.Dispose();
    }
}
