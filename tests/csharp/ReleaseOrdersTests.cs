// SPDX-License-Identifier: Apache-2.0
// A small graph - a pool over counted host memory, a tracking adaptor over
// it, a statistics adaptor on top, a stream, a buffer on that stream from
// the top, the per-device entry set to the top, and a second object of the
// top that the table hands back - released in every order (5040) by
// Dispose, twice each, and by the finalizers: everything still open keeps
// working, everything disposed throws ObjectDisposedException, and at the
// end every byte and the stream are back (the pool returns its chunk only
// when it goes, so a share leaked anywhere above it shows).
using System;
using System.Collections.Generic;
using System.Linq;
using Cmr;

internal sealed class ReleaseOrdersTests
{
    private const int Objects = 7;
    private const int Upstream = 0, Tracking = 1, Top = 2, Stream = 3, Buffer = 4, Entry = 5, Current = 6;
    private static readonly byte[] Contents = { 7, 7, 7 };

    private sealed class Graph
    {
        internal readonly IDisposable[] Objects = new IDisposable[ReleaseOrdersTests.Objects];
        internal readonly bool[] Open = Enumerable.Repeat(true, ReleaseOrdersTests.Objects).ToArray();

        internal Graph(MemoryResource under)
        {
            var pool = new PoolMemoryResource(under, Sizes.MiB);
            var tracking = new TrackingResourceAdaptor(pool);
            // The top as the table hands it back, twice: objects of their own
            // (from _from_ref) once the object set is disposed.
            var set = new StatisticsResourceAdaptor(tracking);
            DeviceResources.Current = set;
            set.Dispose();
            MemoryResource top = DeviceResources.Current, current = DeviceResources.Current;
            Assert.True(top != current && top is StatisticsResourceAdaptor, "objects of their own, of the top's class");
            var stream = new CudaStream();
            var buffer = new DeviceBuffer(Contents, top, stream.Handle);
            var entry = new Reset();
            var all = new IDisposable[] { pool, tracking, top, stream, buffer, entry, current };
            Array.Copy(all, Objects, all.Length);
        }

        internal void Release(int index)
        {
            Objects[index].Dispose();
            Objects[index].Dispose(); // harmless
            Open[index] = false;
        }

        /// <summary>Everything open works; everything disposed throws.</summary>
        internal void Use()
        {
            foreach (int index in new[] { Upstream, Tracking, Top, Current })
            {
                var resource = (MemoryResource)Objects[index];
                if (Open[index]) resource.Deallocate(resource.Allocate(300), 300);
                else Assert.Throws<ObjectDisposedException>(() => resource.Allocate(300), "a disposed resource");
            }
            var stream = (CudaStream)Objects[Stream];
            if (Open[Stream]) stream.Synchronize();
            else Assert.Throws<ObjectDisposedException>(() => stream.Synchronize(), "a disposed stream");
            var buffer = (DeviceBuffer)Objects[Buffer];
            if (Open[Buffer])
            {
                IntPtr on = buffer.Stream;
                buffer.Resize(5000, on);
                Assert.True(buffer.ToArray().Take(3).SequenceEqual(Contents), "the buffer keeps its bytes");
                buffer.Resize(3, on);
                Assert.Equal(on, buffer.Stream, "the buffer stays on its stream");
            }
            else
            {
                Assert.Throws<ObjectDisposedException>(() => { var size = buffer.Size; }, "a disposed buffer");
            }
            if (Open[Entry] && Open[Top])
            {
                using (MemoryResource now = DeviceResources.Current) // an object of its own: the one set is disposed
                {
                    Assert.True(now.IsEqual((MemoryResource)Objects[Top]), "the table holds the top");
                }
            }
        }
    }

    /// <summary>The per-device entry, released by a reset.</summary>
    private sealed class Reset : IDisposable
    {
        public void Dispose()
        {
            DeviceResources.Reset(DeviceResources.CurrentDevice);
        }
    }

    private static void Empty(StatisticsResourceAdaptor bottom, int streams, string what)
    {
        Assert.Equal(0UL, bottom.BytesCurrent, what + ": bytes not given back");
        Assert.Equal(streams, CudaStream.LiveCount, what + ": streams not destroyed");
    }

    [Test]
    private void DisposingInEveryOrder()
    {
        using (var system = new SystemMemoryResource())
        using (var bottom = new StatisticsResourceAdaptor(system))
        {
            int streams = CudaStream.LiveCount;
            List<int[]> orders = LifetimeTests.Permutations(Enumerable.Range(0, Objects).ToArray()).ToList();
            Assert.Equal(5040, orders.Count, "orders");
            foreach (int[] order in orders)
            {
                var graph = new Graph(bottom);
                graph.Use();
                foreach (int index in order)
                {
                    graph.Release(index);
                    graph.Use();
                }
                Empty(bottom, streams, "order " + string.Join(",", order));
            }
        }
    }

    // Not inlined, so that nothing of the graphs stays reachable from the test's frame.
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static void DisposeSomeDropTheRest(MemoryResource bottom)
    {
        List<int[]> orders = LifetimeTests.Permutations(Enumerable.Range(0, Objects).ToArray()).ToList();
        for (int i = 0; i < orders.Count; i += 97)
        {
            var graph = new Graph(bottom);
            foreach (int index in orders[i].Take(i % Objects)) graph.Release(index);
            DeviceResources.Reset(DeviceResources.CurrentDevice); // the table's share is not the finalizers' to drop
        }
    }

    [Test]
    private void TheFinalizersReleaseWhatWasNotDisposed()
    {
        using (var system = new SystemMemoryResource())
        using (var bottom = new StatisticsResourceAdaptor(system))
        {
            Finalizers.Run(); // what earlier tests left to them
            int streams = CudaStream.LiveCount;
            DisposeSomeDropTheRest(bottom);
            Finalizers.Run();
            Empty(bottom, streams, "after the finalizers");
        }
    }

    [Test]
    private void ABufferKeepsItsStream()
    {
        using (var system = new SystemMemoryResource())
        {
            int streams = CudaStream.LiveCount;
            var stream = new CudaStream();
            var first = new DeviceBuffer(new byte[] { 1, 2 }, system, stream.Handle);
            var second = new DeviceBuffer(10, system, stream.Handle);
            IntPtr address = stream.Handle;
            stream.Dispose();
            Assert.Throws<ObjectDisposedException>(() => { var handle = stream.Handle; }, "a disposed stream's handle");
            Assert.Equal(streams + 1, CudaStream.LiveCount, "the stream went while buffers are ordered on it");
            first.Resize(4000, address); // the stream the buffer is on, disposed by its creator and kept by the buffer
            Assert.True(first.ToArray().Take(2).SequenceEqual(new byte[] { 1, 2 }), "the buffer works on its stream");
            Assert.Throws<ObjectDisposedException>(() => new DeviceBuffer(10, system, address), "a new buffer on a disposed stream");
            first.Stream = IntPtr.Zero;
            second.Dispose();
            Assert.Equal(streams, CudaStream.LiveCount, "the stream outlived the last buffer ordered on it");
            first.Dispose();
        }
    }

    [Test]
    private void ObjectsFromTheTableHoldOneShareEach()
    {
        using (var system = new SystemMemoryResource())
        using (var bottom = new StatisticsResourceAdaptor(system))
        {
            var pool = new PoolMemoryResource(bottom, Sizes.MiB);
            DeviceResources.Current = pool;
            pool.Dispose();
            MemoryResource first = DeviceResources.Current, second = DeviceResources.Current;
            Assert.True(first is PoolMemoryResource && first != second, "objects of their own, of the pool's class");
            DeviceResources.Reset(DeviceResources.CurrentDevice);
            first.Dispose();
            Assert.True(((PoolMemoryResource)second).PoolSize > 0, "the pool's size"); // the first's Dispose did not take the second's share
            second.Deallocate(second.Allocate(100), 100);
            Assert.Equal(Sizes.MiB, bottom.BytesCurrent, "the pool is still there");
            second.Dispose();
            Assert.Equal(0UL, bottom.BytesCurrent, "the pool went with its last share");
        }
    }
}
