using System;
using Cmr;

internal sealed class SmokeTests
{
    [Test]
    private void PoolOverSystem()
    {
        using (var system = new SystemMemoryResource())
        using (var pool = new PoolMemoryResource(system, 1 << 20))
        {
            IntPtr p = pool.Allocate(1000);
            Assert.True(p != IntPtr.Zero, "an address");
            Assert.Equal(1UL << 20, pool.PoolSize(), "pool size");
            pool.Deallocate(p, 1000);
        }
    }
}
