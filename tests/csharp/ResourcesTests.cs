// SPDX-License-Identifier: Apache-2.0
// Every resource the host build has, made with its defaults and with every
// parameter given, serving and taking back memory, and its typed methods
// reporting what it was made with.
using System;
using System.IO;
using Cmr;

internal sealed class ResourcesTests : IDisposable
{
    // The system resource of each test (the runner makes a fixture object per
    // test and disposes it after the test).
    private readonly SystemMemoryResource system = new SystemMemoryResource();

    public void Dispose()
    {
        system.Dispose();
    }

    /// <summary>Allocates and frees a few sizes through `resource`, writing to host memory.</summary>
    private static void Serves(MemoryResource resource, string what)
    {
        foreach (ulong bytes in new ulong[] { 1, 1000, 4096, 3 * Sizes.MiB })
        {
            IntPtr ptr = resource.Allocate(bytes);
            Assert.True(ptr != IntPtr.Zero, what + ": an address for " + bytes + " bytes");
            Assert.Equal(0L, ptr.ToInt64() % 256, what + ": the default alignment");
            System.Runtime.InteropServices.Marshal.WriteByte(ptr, (int)(bytes - 1), 0x5a);
            resource.Deallocate(ptr, bytes);
        }
        Assert.Equal(IntPtr.Zero, resource.Allocate(0), what + ": 0 bytes give no address");
    }

    [Test]
    private void SystemServesHostMemory()
    {
        Serves(system, "system");
        Assert.Equal("system", system.TypeName, "type name");
        Assert.True((system.Properties & ResourceProperties.HostAccessible) != 0, "host accessible");
    }

    [Test]
    private void SimulatedWithDefaultsAndACapacity()
    {
        using (var defaulted = new SimulatedMemoryResource())
        using (var small = new SimulatedMemoryResource(2 * Sizes.MiB))
        {
            IntPtr ptr = defaulted.Allocate(1UL << 39);
            Assert.Equal(1UL << 39, defaulted.BytesInUse, "half the default 1 TiB in use");
            defaulted.Deallocate(ptr, 1UL << 39);
            Assert.Equal(1UL, defaulted.DeallocationCount, "one deallocation");
            Assert.Throws<CmrOutOfMemoryException>(() => small.Allocate(3 * Sizes.MiB), "past the capacity");
        }
    }

    [Test]
    private void PoolWithDefaultsAndSizes()
    {
        using (var simulated = new SimulatedMemoryResource())
        using (var defaulted = new PoolMemoryResource(simulated))
        {
            // The default initial size is half the free memory: taken at once.
            Assert.True(defaulted.PoolSize > 0, "the default initial pool taken");
            Assert.Equal(defaulted.PoolSize, simulated.BytesInUse, "what the upstream handed out");
        }
        using (var pool = new PoolMemoryResource(system, Sizes.MiB, 8 * Sizes.MiB))
        {
            Assert.Equal(Sizes.MiB, pool.PoolSize, "initial size");
            Serves(pool, "pool");
            Assert.Equal(pool.PoolSize, pool.FreeSize, "everything free again");
            Assert.Throws<CmrOutOfMemoryException>(() => pool.Allocate(9 * Sizes.MiB), "past maximum_pool_size");
        }
    }

    [Test]
    private void ArenaWithDefaultsAndASize()
    {
        using (var simulated = new SimulatedMemoryResource())
        using (var defaulted = new ArenaMemoryResource(simulated))
        {
            Assert.Equal(simulated.BytesInUse, defaulted.ArenaSize, "the default arena taken at creation");
        }
        using (var arena = new ArenaMemoryResource(system, 16 * Sizes.MiB))
        {
            Assert.Equal(16 * Sizes.MiB, arena.ArenaSize, "arena size");
            Serves(arena, "arena");
            Assert.True(arena.GlobalFreeBytes <= 16 * Sizes.MiB, "global free bytes within the arena");
        }
    }

    [Test]
    private void BinningWithoutAndWithAutomaticBins()
    {
        using (var bare = new BinningMemoryResource(system))
        using (var binned = new BinningMemoryResource(system, 10, 12))
        {
            Assert.Equal(0UL, bare.BinCount, "no automatic bins by default");
            Serves(bare, "binning without bins");
            Assert.Equal(3UL, binned.BinCount, "bins of 1, 2 and 4 KiB");
            Assert.Equal(2048UL, binned.BinSizeFor(1500), "the bin that serves 1500 bytes");
            Assert.Equal(0UL, binned.BinSizeFor(5000), "the upstream serves 5000 bytes");
            Serves(binned, "binning with bins");
            binned.AddBin(8192);
            Assert.Equal(4UL, binned.BinCount, "a bin added");
        }
    }

    [Test]
    private void BinningKeepsABinResourceAlive()
    {
        using (var binning = new BinningMemoryResource(system))
        {
            var bin = new FixedSizeMemoryResource(system, 65536, 4);
            binning.AddBinResource(65536, bin);
            bin.Dispose();
            IntPtr ptr = binning.Allocate(60000);
            binning.Deallocate(ptr, 60000);
            Assert.Equal(65536UL, binning.BinSizeFor(60000), "the bin serves it after its object's Dispose");
        }
    }

    [Test]
    private void FixedSizeWithDefaultsAndSizes()
    {
        using (var defaulted = new FixedSizeMemoryResource(system))
        using (var small = new FixedSizeMemoryResource(system, 4096, 2))
        {
            Assert.Equal(Sizes.MiB, defaulted.BlockSize, "default block size");
            Assert.Equal(128 * Sizes.MiB, defaulted.UpstreamBytes, "128 blocks preallocated");
            Assert.Equal(4096UL, small.BlockSize, "block size");
            IntPtr ptr = small.Allocate(4000);
            small.Deallocate(ptr, 4000);
            Assert.Throws<CmrOutOfMemoryException>(() => small.Allocate(5000), "more than a block");
        }
    }

    [Test]
    private void NullAsksForTheDefaultAndEveryValueIsAValue()
    {
        using (var blocks = new FixedSizeMemoryResource(system, blockSize: null, blocksToPreallocate: 1))
        using (var binning = new BinningMemoryResource(system, null, null))
        {
            Assert.Equal(Sizes.MiB, blocks.BlockSize, "the default block size");
            Assert.Equal(0UL, binning.BinCount, "no automatic bins by default");
        }
        // The extremes that once meant "default" are values, refused by the resource.
        Assert.ThrowsStatus(Status.SizeOverflow,
            () => new FixedSizeMemoryResource(system, ulong.MaxValue).Dispose(), "a block of 2^64-1 bytes");
        var e = Assert.ThrowsStatus(Status.InvalidArgument,
            () => new BinningMemoryResource(system, 10, int.MinValue).Dispose(), "max_size_exponent int.MinValue");
        Assert.True(e.Message.Contains("max_size_exponent -2147483648 is outside"), e.Message);
    }

    [Test]
    private void AlignedWithDefaultsAndAnAlignment()
    {
        using (var defaulted = new AlignedResourceAdaptor(system))
        using (var aligned = new AlignedResourceAdaptor(system, 4096, 1024))
        {
            Assert.Equal(256UL, defaulted.AllocationAlignment, "default alignment");
            Assert.Equal(65536UL, defaulted.AlignmentThreshold, "default threshold");
            IntPtr ptr = aligned.Allocate(2000);
            Assert.Equal(0L, ptr.ToInt64() % 4096, "aligned to 4096 past the threshold");
            aligned.Deallocate(ptr, 2000);
            IntPtr wide = defaulted.Allocate(100, 1UL << 16);
            Assert.Equal(0L, wide.ToInt64() % (1L << 16), "an explicit alignment honoured");
            defaulted.Deallocate(wide, 100, 1UL << 16);
            Assert.True(defaulted.Upstream == system, "the adaptor holds its upstream object");
        }
    }

    [Test]
    private void LimitingCountsAndRefuses()
    {
        using (var limiting = new LimitingResourceAdaptor(system, 4096))
        using (var coarse = new LimitingResourceAdaptor(system, Sizes.MiB, 4096))
        {
            IntPtr ptr = limiting.Allocate(1000);
            Assert.Equal(1024UL, limiting.AllocatedBytes, "1000 bytes count as 1024 at the default 256");
            Assert.Equal(4096UL, limiting.AllocationLimit, "the limit");
            limiting.Deallocate(ptr, 1000);
            Assert.Equal(0UL, limiting.AllocatedBytes, "given back");
            IntPtr one = coarse.Allocate(1);
            Assert.Equal(4096UL, coarse.AllocatedBytes, "rounded to the adaptor's alignment");
            coarse.Deallocate(one, 1);
        }
    }

    [Test]
    private void LoggingWritesRowsToItsFile()
    {
        string path = Path.Combine(Path.GetTempPath(), "cmr-csharp-" + Guid.NewGuid() + ".csv");
        try
        {
            using (var logging = new LoggingResourceAdaptor(system, path, true))
            {
                Assert.Equal(path, logging.Filename, "file name");
                IntPtr ptr = logging.Allocate(1000);
                logging.Deallocate(ptr, 1000);
                logging.Flush();
                Assert.Equal(0UL, logging.LostRows, "no lost rows");
            }
            string[] lines = File.ReadAllLines(path);
            Assert.Equal("Thread,Time,Action,Pointer,Size,Stream", lines[0], "header");
            Assert.Equal(3, lines.Length, "a row per allocation and per free");
            Assert.True(lines[1].Contains(",allocate,") && lines[2].Contains(",free,"), "the actions");
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Test]
    private void PassThroughAdaptors()
    {
        using (var prefetch = new PrefetchResourceAdaptor(system))
        using (var threadSafe = new ThreadSafeResourceAdaptor(system))
        {
            Serves(prefetch, "prefetch");
            Serves(threadSafe, "thread_safe");
        }
    }

    [Test]
    private void TrackingWithAndWithoutStacks()
    {
        using (var plain = new TrackingResourceAdaptor(system))
        using (var stacks = new TrackingResourceAdaptor(system, true))
        {
            IntPtr a = plain.Allocate(1000);
            IntPtr b = stacks.Allocate(3000);
            Assert.Equal(1000UL, plain.AllocatedBytes, "tracked bytes");
            Assert.Equal(1UL, stacks.OutstandingCount, "one outstanding");
            Assert.True(stacks.OutstandingReport.Contains("3000"), "the report names the size");
            Assert.Equal(1UL, stacks.OutstandingSnapshot(), "one allocation in the snapshot");
            Assert.Equal(b, stacks.SnapshotPointer(0), "the snapshot's pointer");
            Assert.Equal(3000UL, stacks.SnapshotBytes(0), "the snapshot's size");
            Assert.True(stacks.SnapshotStack(0).StartsWith("#0 in "), "the snapshot's stack");
            Assert.Equal(1UL, plain.OutstandingSnapshot(), "the plain adaptor's snapshot");
            Assert.Equal("", plain.SnapshotStack(0), "no stack unless captured");
            var past = Assert.ThrowsStatus(Status.InvalidArgument, () => plain.SnapshotBytes(1), "past the snapshot");
            Assert.True(past.Message.Contains("index 1 is past the snapshot's 1 allocations"), past.Message);
            plain.Deallocate(a, 1000);
            stacks.Deallocate(b, 3000);
            Assert.Equal(0UL, plain.OutstandingCount, "nothing outstanding");
        }
    }

    [Test]
    private void PoolFragmentationToolsReturnMemoryToTheUpstream()
    {
        using (var upstream = new SimulatedMemoryResource(1UL << 30))
        using (var pool = new PoolMemoryResource(upstream, 0, null, Sizes.MiB))
        {
            IntPtr a = pool.Allocate(4 * Sizes.MiB); // a chunk of the request's size
            IntPtr b = pool.Allocate(256); // doubling would take 4 MiB more; maximumGrowth caps it at 1 MiB
            Assert.Equal(5 * Sizes.MiB, pool.PoolSize, "pool size");
            Assert.Equal(5 * Sizes.MiB, upstream.BytesInUse, "upstream bytes");
            Assert.Equal(Sizes.MiB - 256, pool.LargestFreeBlock, "largest free block");
            pool.Deallocate(a, 4 * Sizes.MiB);
            pool.Release(); // the 4 MiB chunk is wholly free: back to the upstream
            Assert.Equal(Sizes.MiB, pool.PoolSize, "pool size after release");
            Assert.Equal(Sizes.MiB, upstream.BytesInUse, "upstream bytes after release");
            pool.Deallocate(b, 256);
            Assert.Equal(Sizes.MiB, pool.LargestFreeBlock, "largest free block, all free");
            pool.Release();
            Assert.Equal(0UL, upstream.BytesInUse, "upstream bytes at the end");
        }
    }

    [Test]
    private void ArenaAndBinningReportTheirLargestFreeBlock()
    {
        using (var upstream = new SimulatedMemoryResource(1UL << 30))
        using (var arena = new ArenaMemoryResource(upstream, 4 * Sizes.MiB))
        using (var binning = new BinningMemoryResource(upstream, 8, 10))
        {
            Assert.Equal(4 * Sizes.MiB, arena.LargestFreeBlock, "arena, new");
            IntPtr ptr = arena.Allocate(1000); // a 1 MiB superblock leaves the global arena
            Assert.Equal(3 * Sizes.MiB, arena.LargestFreeBlock, "arena, one superblock out");
            arena.Deallocate(ptr, 1000);
            Assert.Equal(1024UL, binning.LargestFreeBlock, "binning: the largest bin's blocks");
        }
    }
}
