// SPDX-License-Identifier: Apache-2.0
// The per-device table from C#.
using System;
using Cmr;

internal sealed class DevicesTests
{
    [Test]
    private void TheLibraryLoaded()
    {
        Assert.True(System.Text.RegularExpressions.Regex.IsMatch(Library.Version, @"^\d+\.\d+\.\d+$"),
                    "a version MAJOR.MINOR.PATCH: " + Library.Version);
        Assert.Equal(false, Library.BuiltWithCuda, "the csharp.* suites run on the host build");
    }

    [Test]
    private void TheDefaultIsTheSystemResource()
    {
        DeviceResources.Reset(0);
        Assert.Equal(1, DeviceResources.DeviceCount, "one device in the host build");
        using (MemoryResource current = DeviceResources.Current)
        {
            Assert.True(current is SystemMemoryResource, "the host build's default: " + current);
        }
    }

    [Test]
    private void SetGetAndReset()
    {
        using (var system = new SystemMemoryResource())
        using (var statistics = new StatisticsResourceAdaptor(system))
        {
            DeviceResources.Current = statistics;
            Assert.True(DeviceResources.Get(0) == statistics, "the object that was set comes back");
            using (var buffer = new DeviceBuffer(128))
            {
                Assert.Equal(128UL, statistics.BytesCurrent, "a buffer without a resource uses the current one");
            }
            DeviceResources.Reset(0);
            Assert.True(DeviceResources.Current is SystemMemoryResource, "back to the default");
        }
    }

    [Test]
    private void TheTableKeepsWhatWasSet()
    {
        var statistics = new StatisticsResourceAdaptor(new SystemMemoryResource());
        DeviceResources.Set(0, statistics);
        statistics.Dispose();
        using (MemoryResource found = DeviceResources.Get(0))
        {
            Assert.True(found is StatisticsResourceAdaptor && found != statistics, "a new object over the table's share");
            IntPtr ptr = found.Allocate(10);
            found.Deallocate(ptr, 10);
        }
        DeviceResources.Reset(0);
    }
}
