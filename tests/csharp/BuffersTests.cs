// SPDX-License-Identifier: Apache-2.0
// DeviceBuffer over host resources: contents, size and capacity, streams.
using System;
using System.Linq;
using Cmr;

internal sealed class BuffersTests
{
    [Test]
    private void ContentsGoInAndComeBack()
    {
        using (var system = new SystemMemoryResource())
        using (var buffer = new DeviceBuffer(Enumerable.Range(0, 300).Select(i => (byte)i).ToArray(), system))
        {
            Assert.Equal(300UL, buffer.Size, "size");
            Assert.Equal(299 % 256, (int)buffer.ToArray()[299], "the last byte");
            buffer.CopyFrom(new byte[] { 9, 8, 7 });
            byte[] back = buffer.ToArray();
            Assert.Equal((byte)9, back[0], "copied over the start");
            Assert.Equal((byte)3, back[3], "the rest kept");
            Assert.True(buffer.Resource == system, "the buffer keeps its resource object");
        }
    }

    [Test]
    private void ResizeReserveAndShrink()
    {
        using (var system = new SystemMemoryResource())
        using (var statistics = new StatisticsResourceAdaptor(system))
        using (var buffer = new DeviceBuffer(100, statistics))
        {
            Assert.Equal(100UL, statistics.BytesCurrent, "allocated through the resource");
            buffer.Reserve(1000);
            Assert.Equal(1000UL, buffer.Capacity, "reserved");
            Assert.Equal(100UL, buffer.Size, "size unchanged");
            buffer.Resize(500);
            Assert.Equal(1000UL, buffer.Capacity, "no reallocation within the capacity");
            buffer.ShrinkToFit();
            Assert.Equal(500UL, buffer.Capacity, "shrunk");
            Assert.Equal(500UL, statistics.BytesCurrent, "the old memory freed");
            buffer.Prefetch();
        }
    }

    [Test]
    private void AnExplicitAlignmentIsKept()
    {
        using (var system = new SystemMemoryResource())
        using (var statistics = new StatisticsResourceAdaptor(system))
        {
            using (var buffer = new DeviceBuffer(100, 4096, statistics))
            {
                Assert.Equal(4096UL, buffer.Alignment, "the alignment asked for");
                Assert.Equal(0L, buffer.Data.ToInt64() % 4096, "aligned when made");
                buffer.Reserve(10000);
                Assert.Equal(0L, buffer.Data.ToInt64() % 4096, "aligned when reserved");
                buffer.ShrinkToFit();
                Assert.Equal(0L, buffer.Data.ToInt64() % 4096, "aligned when shrunk");
            }
            using (var copied = new DeviceBuffer(new byte[] { 1, 2, 3 }, 1024, statistics))
            {
                Assert.Equal(0L, copied.Data.ToInt64() % 1024, "a copy aligned");
                Assert.Equal((byte)3, copied.ToArray()[2], "a copy's contents");
            }
            using (var plain = new DeviceBuffer(10, statistics))
            {
                Assert.Equal(DeviceBuffer.DefaultAlignment, plain.Alignment, "the default");
            }
            Assert.ThrowsStatus(Status.BadAlignment, () => new DeviceBuffer(10, 3000, statistics), "alignment 3000");
            Assert.Equal(0UL, statistics.BytesCurrent, "everything given back");
        }
    }

    [Test]
    private void StreamsOfABuffer()
    {
        using (var system = new SystemMemoryResource())
        using (var stream = new CudaStream())
        using (var buffer = new DeviceBuffer(64, system, stream.Handle))
        {
            Assert.Equal(stream.Handle, buffer.Stream, "ordered on its stream");
            buffer.Stream = IntPtr.Zero;
            Assert.Equal(IntPtr.Zero, buffer.Stream, "moved to the default stream");
            stream.Synchronize();
        }
    }

    [Test]
    private void ADisposedBufferRefusesUse()
    {
        var buffer = new DeviceBuffer(10, new SystemMemoryResource());
        buffer.Dispose();
        Assert.Throws<ObjectDisposedException>(() => { var size = buffer.Size; }, "size of a disposed buffer");
        Assert.Throws<ObjectDisposedException>(() => buffer.Resize(20), "resize of a disposed buffer");
    }

    [Test]
    private void CopiesPastTheSizeAreRefused()
    {
        using (var buffer = new DeviceBuffer(4, new SystemMemoryResource()))
        {
            Assert.ThrowsStatus(Status.InvalidArgument, () => buffer.CopyFrom(new byte[5]), "5 bytes into 4");
            Assert.ThrowsStatus(Status.InvalidArgument, () => buffer.CopyTo(new byte[5]), "5 bytes out of 4");
        }
    }
}
