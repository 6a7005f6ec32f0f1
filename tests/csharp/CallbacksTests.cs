// C# delegates behind the callback resource and the failure callback
// adaptor, and what happens when they throw.
using System;
using Cmr;

internal sealed class CallbacksTests
{
    [Test]
    private void ACallbackResourceCallsItsDelegates()
    {
        using (var system = new SystemMemoryResource())
        {
            int allocations = 0, deallocations = 0;
            var callback = new CallbackMemoryResource(
                (bytes, stream) => { allocations++; return system.Allocate(bytes, stream); },
                (ptr, bytes, stream) => { deallocations++; system.Deallocate(ptr, bytes, stream); },
                ResourceProperties.HostAccessible);
            using (var statistics = new StatisticsResourceAdaptor(callback))
            {
                callback.Dispose();
                IntPtr ptr = statistics.Allocate(1000);
                statistics.Deallocate(ptr, 1000);
                Assert.Equal(1, allocations, "allocate called through the adaptor");
                Assert.Equal(1, deallocations, "deallocate called");
                Assert.Equal(ResourceProperties.HostAccessible, statistics.Properties, "the properties given");
            }
        }
    }

    [Test]
    private void ADelegateReturningNothingIsOutOfMemory()
    {
        using (var callback = new CallbackMemoryResource((bytes, stream) => IntPtr.Zero, (ptr, bytes, stream) => { }))
        {
            Assert.Equal(ResourceProperties.DeviceAccessible, callback.Properties, "the default properties");
            Assert.Throws<CmrOutOfMemoryException>(() => callback.Allocate(100), "no memory from the delegate");
        }
    }

    [Test]
    private void AnExceptionOfADelegateComesOutOfTheCall()
    {
        using (var system = new SystemMemoryResource())
        using (var callback = new CallbackMemoryResource(
            (bytes, stream) => { throw new InvalidOperationException("allocate refused"); },
            (ptr, bytes, stream) => { throw new FormatException("deallocate refused"); }))
        using (var pool = new PoolMemoryResource(callback, 0))
        {
            var e = Assert.Throws<InvalidOperationException>(() => pool.Allocate(100), "through a pool");
            Assert.Equal("allocate refused", e.Message, "the delegate's own exception");
        }
        bool refuse = true;
        using (var system = new SystemMemoryResource())
        using (var callback = new CallbackMemoryResource(
            (bytes, stream) => system.Allocate(bytes, stream),
            (ptr, bytes, stream) =>
            {
                system.Deallocate(ptr, bytes, stream);
                if (refuse) throw new FormatException("deallocate refused");
            }))
        {
            IntPtr ptr = callback.Allocate(100);
            Assert.Throws<FormatException>(() => callback.Deallocate(ptr, 100), "from deallocate");
            // The exception was that call's: the next one is clean.
            refuse = false;
            callback.Deallocate(callback.Allocate(10), 10, IntPtr.Zero);
        }
    }

    [Test]
    private void AFailureCallbackRetriesUntilItGivesUp()
    {
        using (var system = new SystemMemoryResource())
        using (var limiting = new LimitingResourceAdaptor(system, Sizes.MiB))
        {
            IntPtr held = limiting.Allocate(Sizes.MiB);
            int calls = 0;
            using (var adaptor = new FailureCallbackResourceAdaptor(limiting, bytes =>
            {
                calls++;
                Assert.Equal(4096UL, bytes, "the bytes asked for");
                if (calls < 3) return true;
                limiting.Deallocate(held, Sizes.MiB);
                return true;
            }))
            {
                IntPtr ptr = adaptor.Allocate(4096);
                Assert.Equal(3, calls, "retried until the third call made room");
                adaptor.Deallocate(ptr, 4096);
                calls = 0;
                using (var never = new FailureCallbackResourceAdaptor(limiting, bytes => { calls++; return false; }))
                {
                    Assert.Throws<CmrOutOfMemoryException>(() => never.Allocate(2 * Sizes.MiB), "given up");
                    Assert.Equal(1, calls, "called once, then out of memory");
                }
            }
        }
    }

    [Test]
    private void AThrowingFailureCallbackGivesItsException()
    {
        using (var system = new SystemMemoryResource())
        using (var limiting = new LimitingResourceAdaptor(system, 4096))
        using (var adaptor = new FailureCallbackResourceAdaptor(limiting, bytes => { throw new TimeoutException("no"); }))
        {
            Assert.Throws<TimeoutException>(() => adaptor.Allocate(8192), "the callback's exception");
        }
    }
}
