// SPDX-License-Identifier: Apache-2.0
// Bad inputs, each as its own error: cmr's statuses as the .NET exception
// of their kind (a bad argument as CmrArgumentException or
// CmrArgumentOutOfRangeException, out of memory as CmrOutOfMemoryException,
// a file that cannot be written as CmrIOException, an IOException, the rest
// as CmrException) with cmr's message, and C#'s own argument errors where C#
// can tell first.
using System;
using Cmr;

internal sealed class ErrorsTests
{
    [Test]
    private void OutOfMemoryFromALimitingAdaptor()
    {
        using (var system = new SystemMemoryResource())
        using (var limiting = new LimitingResourceAdaptor(system, Sizes.MiB))
        {
            IntPtr ptr = limiting.Allocate(Sizes.MiB);
            var e = Assert.Throws<CmrOutOfMemoryException>(() => limiting.Allocate(256), "past the limit");
            Assert.Equal(Status.OutOfMemory, e.Status, "its status");
            Assert.True(e.CmrMessage.Length > 0, "cmr's message: " + e.Message);
            Assert.True(e is CmrException, "an out of memory is a CmrException too");
            limiting.Deallocate(ptr, Sizes.MiB);
            limiting.Deallocate(limiting.Allocate(Sizes.MiB), Sizes.MiB);
        }
    }

    [Test]
    private void AFullDiskIsAnIOException()
    {
        using (var system = new SystemMemoryResource())
        {
            using (var log = new LoggingResourceAdaptor(system, "/dev/full"))
            {
                log.Deallocate(log.Allocate(256), 256); // a row lost does not fail the call
                var e = Assert.Throws<CmrIOException>(() => log.Flush(), "a flush to a full device");
                Assert.Equal(Status.IO, e.Status, "its status");
                Assert.True(e is System.IO.IOException, "an IOException");
                Assert.True(e.CmrMessage.Contains("3 rows could not be written to /dev/full: No space left on device"),
                            "cmr's message: " + e.Message);
                Assert.Equal(3UL, log.LostRows, "the rows lost");
            }
            using (var arena = new ArenaMemoryResource(system, Sizes.MiB, true, "/dev/full"))
            {
                var e = Assert.Throws<CmrIOException>(() => arena.Dump(), "a dump to a full device");
                Assert.True(e.CmrMessage.Contains("writing the dump to /dev/full failed"), "cmr's message: " + e.Message);
            }
        }
    }

    [Test]
    private void BadAndUnsupportedAlignments()
    {
        using (var system = new SystemMemoryResource())
        using (var fixedSize = new FixedSizeMemoryResource(system, 4096, 1))
        {
            Assert.ThrowsStatus(Status.BadAlignment, () => system.Allocate(100, 3), "alignment 3");
            Assert.ThrowsStatus(Status.BadAlignment, () => system.Allocate(100, 0), "alignment 0");
            Assert.ThrowsStatus(Status.UnsupportedAlignment, () => fixedSize.Allocate(100, 8192),
                                "more than fixed_size honours");
        }
    }

    [Test]
    private void ForeignPointersAndWrongSizes()
    {
        using (var system = new SystemMemoryResource())
        using (var pool = new PoolMemoryResource(system, Sizes.MiB))
        using (var other = new PoolMemoryResource(system, Sizes.MiB))
        {
            IntPtr ptr = pool.Allocate(1000);
            Assert.ThrowsStatus(Status.UnknownPointer, () => other.Deallocate(ptr, 1000), "another pool's block");
            Assert.ThrowsStatus(Status.UnknownPointer, () => system.Deallocate(new IntPtr(0x1000), 8), "never allocated");
            Assert.ThrowsStatus(Status.InvalidArgument, () => pool.Deallocate(ptr, 999), "another size");
            pool.Deallocate(ptr, 1000);
            Assert.ThrowsStatus(Status.UnknownPointer, () => pool.Deallocate(ptr, 1000), "freed twice");
            pool.Deallocate(IntPtr.Zero, 1000);
        }
    }

    [Test]
    private void BadParametersNameWhatIsWrong()
    {
        using (var system = new SystemMemoryResource())
        {
            var e = Assert.ThrowsStatus(Status.InvalidArgument, () => new PoolMemoryResource(system, 1000),
                                        "initial size not a multiple of 256");
            Assert.True(e.CmrMessage.Contains("initial_pool_size"), "the message names the parameter: " + e.CmrMessage);
            Assert.ThrowsStatus(Status.InvalidArgument, () => new PoolMemoryResource(system, 2 * Sizes.MiB, Sizes.MiB),
                                "initial above maximum");
            Assert.ThrowsStatus(Status.InvalidArgument, () => new BinningMemoryResource(system, 7, 9), "exponent below 8");
            Assert.ThrowsStatus(Status.InvalidArgument, () => new AlignedResourceAdaptor(system, 300), "alignment 300");
        }
    }

    [Test]
    private void NullArguments()
    {
        Assert.Throws<ArgumentNullException>(() => new PoolMemoryResource(null, 0), "a null upstream");
        Assert.Throws<ArgumentNullException>(() => new ResourceStack(null), "a null expression");
        Assert.Throws<ArgumentNullException>(() => new CallbackMemoryResource(null, (p, b, s) => { }), "a null callback");
        using (var system = new SystemMemoryResource())
        {
            Assert.Throws<ArgumentNullException>(() => system.IsEqual(null), "IsEqual(null)");
        }
    }

    [Test]
    private void BadStackExpressions()
    {
        var e = Assert.ThrowsStatus(Status.InvalidArgument, () => new ResourceStack("pool(nothing)"), "an unknown resource");
        Assert.True(e.CmrMessage.Contains("nothing"), "the message names it: " + e.CmrMessage);
        Assert.ThrowsStatus(Status.InvalidArgument, () => new ResourceStack("pool(system, colour=1)"), "an unknown parameter");
        Assert.ThrowsStatus(Status.InvalidArgument, () => new ResourceStack("pool(system"), "an unclosed parenthesis");
    }

    [Test]
    private void UnknownDevices()
    {
        Assert.ThrowsStatus(Status.UnknownDevice, () => DeviceResources.Get(7), "device 7 of 1");
        Assert.ThrowsStatus(Status.UnknownDevice, () => DeviceResources.Reset(-2), "device -2");
    }
}
