// SPDX-License-Identifier: Apache-2.0
// Resources shared between threads (System.Threading): allocations from
// many threads, on their own streams, frees on another thread, and
// disposal racing with use.
using System;
using System.Collections.Concurrent;
using System.Linq;
using System.Threading;
using Cmr;

internal sealed class ThreadsTests
{
    private const int Threads = 8;

    private static void RunThreads(int count, Action<int> body)
    {
        Exception failure = null;
        var threads = Enumerable.Range(0, count).Select(i => new Thread(() =>
        {
            try
            {
                body(i);
            }
            catch (Exception e)
            {
                Interlocked.CompareExchange(ref failure, e, null);
            }
        })).ToList();
        threads.ForEach(t => t.Start());
        threads.ForEach(t => t.Join());
        if (failure != null) throw new AssertionFailed("a thread failed: " + failure);
    }

    [Test]
    private void ManyThreadsOnTheirOwnStreams()
    {
        using (var system = new SystemMemoryResource())
        using (var statistics = new StatisticsResourceAdaptor(system))
        using (var pool = new PoolMemoryResource(statistics, 4 * Sizes.MiB))
        using (var counted = new StatisticsResourceAdaptor(pool))
        {
            RunThreads(Threads, i =>
            {
                using (var stream = new CudaStream())
                {
                    var random = new Random(i);
                    for (int n = 0; n < 2000; n++)
                    {
                        ulong bytes = (ulong)random.Next(1, 20000);
                        IntPtr ptr = counted.Allocate(bytes, stream.Handle);
                        System.Runtime.InteropServices.Marshal.WriteByte(ptr, (byte)i);
                        counted.Deallocate(ptr, bytes, stream.Handle);
                    }
                }
            });
            Assert.Equal((ulong)(Threads * 2000), counted.AllocationsTotal, "every allocation counted");
            Assert.Equal(0UL, counted.BytesCurrent, "every byte back");
        }
    }

    [Test]
    private void FreedOnAnotherThread()
    {
        using (var system = new SystemMemoryResource())
        using (var statistics = new StatisticsResourceAdaptor(system))
        using (var pool = new PoolMemoryResource(statistics, Sizes.MiB))
        {
            var handedOver = new BlockingCollection<IntPtr>();
            RunThreads(2, i =>
            {
                for (int n = 0; n < 1000; n++)
                {
                    if (i == 0) handedOver.Add(pool.Allocate(512));
                    else pool.Deallocate(handedOver.Take(), 512);
                }
            });
            Assert.Equal(pool.PoolSize, pool.FreeSize, "every block freed by the other thread");
        }
    }

    [Test]
    private void DisposalRacingWithUse()
    {
        using (var system = new SystemMemoryResource())
        using (var bottom = new StatisticsResourceAdaptor(system))
        {
            for (int round = 0; round < 20; round++)
            {
                var pool = new PoolMemoryResource(bottom, Sizes.MiB);
                int disposedSeen = 0;
                RunThreads(4, i =>
                {
                    if (i == 0)
                    {
                        Thread.Sleep(1);
                        pool.Dispose();
                        return;
                    }
                    // Until the disposal shows (a minute at most: then the count below fails).
                    var deadline = DateTime.UtcNow.AddMinutes(1);
                    try
                    {
                        while (DateTime.UtcNow < deadline) pool.Deallocate(pool.Allocate(256), 256);
                    }
                    catch (ObjectDisposedException)
                    {
                        Interlocked.Increment(ref disposedSeen);
                    }
                });
                Assert.Equal(3, disposedSeen, "each user saw the disposal as ObjectDisposedException");
            }
            Assert.Equal(0UL, bottom.BytesCurrent, "every pool gave its memory back");
        }
    }
}
