// SPDX-License-Identifier: Apache-2.0
// The public API of Cmr.dll speaks .NET: no SWIG type or SafeHandle in it,
// properties for the spec's getters, ObjectDisposedException naming the
// disposed object, ArgumentException and ArgumentOutOfRangeException for bad
// arguments, each carrying cmr's status.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Reflection;
using Cmr;

internal sealed class ConventionsTests
{
    private static readonly Assembly Library = typeof(MemoryResource).Assembly;

    [Test]
    private void NoSwigTypeOrHandleIsPublic()
    {
        var found = new List<string>();
        Type[] exported = Library.GetExportedTypes();
        Assert.True(exported.Length > 30, "the assembly exports its classes");
        foreach (Type type in exported)
        {
            if (type.Name.IndexOf("swig", StringComparison.OrdinalIgnoreCase) >= 0 || type.Name.StartsWith("CmrNative")
                || typeof(System.Runtime.InteropServices.SafeHandle).IsAssignableFrom(type))
            {
                found.Add(type.FullName);
            }
            const BindingFlags visible = BindingFlags.Public | BindingFlags.Instance | BindingFlags.Static | BindingFlags.DeclaredOnly;
            foreach (MemberInfo member in type.GetMembers(visible))
            {
                if (member.Name.IndexOf("swig", StringComparison.OrdinalIgnoreCase) >= 0) found.Add(type.FullName + "." + member.Name);
            }
        }
        // The internal ones are still there, where SWIG's modules use them.
        Assert.True(Library.GetType("Cmr.ResourceHandle") != null, "ResourceHandle exists, internal");
        Assert.Equal("", string.Join(", ", found), "public SWIG types, members and SafeHandles");
    }

    [Test]
    private void GettersAreProperties()
    {
        foreach (var getter in new[] { Tuple.Create(typeof(PoolMemoryResource), "PoolSize"),
                                       Tuple.Create(typeof(StatisticsResourceAdaptor), "BytesCurrent"),
                                       Tuple.Create(typeof(LimitingResourceAdaptor), "AllocationLimit") })
        {
            PropertyInfo property = getter.Item1.GetProperty(getter.Item2);
            Assert.True(property != null && property.CanRead && !property.CanWrite, getter.Item1.Name + "." + getter.Item2 + " is a read-only property");
            Assert.True(getter.Item1.GetMethod(getter.Item2) == null, getter.Item2 + " is not also a method");
        }
        // A method that changes the resource stays a method (spec: changes = true).
        Assert.True(typeof(TrackingResourceAdaptor).GetMethod("OutstandingSnapshot") != null, "OutstandingSnapshot() is a method");
        using (var system = new SystemMemoryResource())
        using (var pool = new PoolMemoryResource(system, Sizes.MiB))
        using (var statistics = new StatisticsResourceAdaptor(pool))
        {
            IntPtr block = statistics.Allocate(1000);
            Assert.Equal(1000UL, statistics.BytesCurrent, "BytesCurrent reads the counter");
            Assert.Equal(Sizes.MiB, pool.PoolSize, "PoolSize reads the pool");
            statistics.Deallocate(block, 1000);
        }
    }

    [Test]
    private void ADisposedObjectIsNamed()
    {
        var system = new SystemMemoryResource();
        var pool = new PoolMemoryResource(system, Sizes.MiB);
        pool.Dispose();
        var e = Assert.Throws<ObjectDisposedException>(() => pool.Allocate(8), "allocating from a disposed pool");
        Assert.Equal("PoolMemoryResource", e.ObjectName, "the exception names the disposed class");
        e = Assert.Throws<ObjectDisposedException>(() => { var size = pool.PoolSize; }, "a property of a disposed pool");
        Assert.Equal("PoolMemoryResource", e.ObjectName, "the property's exception names it too");
        e = Assert.Throws<ObjectDisposedException>(() => new StatisticsResourceAdaptor(pool), "a disposed upstream");
        Assert.Equal("PoolMemoryResource", e.ObjectName, "the upstream is named");
        system.Dispose();

        var buffer = new DeviceBuffer(4, new SystemMemoryResource());
        buffer.Dispose();
        e = Assert.Throws<ObjectDisposedException>(() => { var size = buffer.Size; }, "a disposed buffer");
        Assert.Equal("DeviceBuffer", e.ObjectName, "the buffer is named");

        var stack = new ResourceStack("pool(system, initial_pool_size=64KiB)");
        stack.Dispose();
        e = Assert.Throws<ObjectDisposedException>(() => { var text = stack.Expression; }, "a disposed stack");
        Assert.Equal("ResourceStack", e.ObjectName, "the stack is named");
    }

    [Test]
    private void BadArgumentsAreArgumentExceptions()
    {
        using (var system = new SystemMemoryResource())
        {
            var invalid = Assert.Throws<CmrArgumentException>(() => new PoolMemoryResource(system, 1000), "a pool size not a multiple of 256");
            Assert.Equal(Status.InvalidArgument, invalid.Status, "its status");
            Assert.True(invalid is ArgumentException, "an ArgumentException");
            var range = Assert.Throws<CmrArgumentOutOfRangeException>(() => system.Allocate(64, 3), "an alignment not a power of two");
            Assert.Equal(Status.BadAlignment, range.Status, "its status");
            Assert.True(range is ArgumentOutOfRangeException && range.Message.Contains("BadAlignment: "), "an ArgumentOutOfRangeException with cmr's message: " + range.Message);
            Assert.Throws<CmrArgumentException>(() => new ResourceStack("pool(nonesuch)"), "an unknown resource in a stack");
            IntPtr block = system.Allocate(64);
            Assert.Throws<CmrArgumentException>(() => system.Deallocate(block, 128), "a free with another size");
            system.Deallocate(block, 64);
        }
        Assert.Throws<CmrArgumentOutOfRangeException>(() => DeviceResources.Get(DeviceResources.DeviceCount), "a device past the last");
    }
}
