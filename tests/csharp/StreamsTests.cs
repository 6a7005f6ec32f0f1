// SPDX-License-Identifier: Apache-2.0
// Streams from C#: CudaStream, and allocations ordered on streams.
using System;
using Cmr;

internal sealed class StreamsTests
{
    [Test]
    private void ADisposedStreamRefusesUse()
    {
        var stream = new CudaStream();
        Assert.True(stream.Handle != IntPtr.Zero, "a stream other than the default");
        stream.Dispose();
        stream.Dispose();
        Assert.Throws<ObjectDisposedException>(() => { var handle = stream.Handle; }, "the handle of a disposed stream");
        Assert.Throws<ObjectDisposedException>(() => stream.Synchronize(), "synchronizing a disposed stream");
    }

    [Test]
    private void MemoryFreedOnAStreamIsReusedThere()
    {
        using (var system = new SystemMemoryResource())
        using (var pool = new PoolMemoryResource(system, Sizes.MiB))
        using (var stream = new CudaStream())
        {
            IntPtr first = pool.Allocate(4096, stream.Handle);
            pool.Deallocate(first, 4096, stream.Handle);
            IntPtr again = pool.Allocate(4096, stream.Handle);
            Assert.Equal(first, again, "the block freed on the stream serves it again");
            pool.Deallocate(again, 4096, stream.Handle);
            IntPtr aligned = pool.Allocate(100, 4096, stream.Handle);
            Assert.Equal(0L, aligned.ToInt64() % 4096, "an alignment on a stream");
            pool.Deallocate(aligned, 100, 4096, stream.Handle);
            stream.Synchronize();
            Assert.Equal(pool.PoolSize, pool.FreeSize, "everything free");
        }
    }
}
