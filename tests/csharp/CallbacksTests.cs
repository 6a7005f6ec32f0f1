// SPDX-License-Identifier: Apache-2.0
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

    // A callback resource over `system` whose delegates count their calls:
    // calls[0] allocations, calls[1] deallocations.
    private static CallbackMemoryResource Counting(SystemMemoryResource system, int[] calls)
    {
        return new CallbackMemoryResource(
            (bytes, stream) => { calls[0]++; return system.Allocate(bytes, stream); },
            (ptr, bytes, stream) => { calls[1]++; system.Deallocate(ptr, bytes, stream); });
    }

    // With a system resource: `drop` (not inlined: nothing it makes stays
    // reachable from a frame) makes objects over Counting(system, calls) and
    // lets them go, the finalizers run, then `check` reads the counts.
    private static void AfterFinalizers(Action<SystemMemoryResource, int[]> drop, Action<int[]> check)
    {
        var calls = new int[2];
        using (var system = new SystemMemoryResource())
        {
            drop(system, calls);
            Finalizers.Run();
            check(calls);
        }
    }

    [Test]
    private void TheFinalizersStillReachTheDelegates()
    {
        AfterFinalizers(MakeAndDrop, calls =>
        {
            Assert.True(calls[0] > 0, "the pool took its chunk through the delegate");
            Assert.Equal(calls[0], calls[1], "every chunk given back through the delegate, from a finalizer");
        });
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static void MakeAndDrop(SystemMemoryResource system, int[] calls)
    {
        var callback = Counting(system, calls);
        var pool = new PoolMemoryResource(callback, Sizes.MiB);
        var statistics = new StatisticsResourceAdaptor(pool);
        statistics.Deallocate(statistics.Allocate(1000), 1000);
    }

    [Test]
    private void TheTableKeepsTheDelegatesOfWhatItHolds()
    {
        AfterFinalizers(SetAndDrop, calls =>
        {
            using (MemoryResource current = DeviceResources.Current)
            {
                current.Deallocate(current.Allocate(100), 100);
                Assert.Equal(1, calls[0], "the delegate called through the table, its objects long gone");
                DeviceResources.Reset(0);
                Finalizers.Run();
                current.Deallocate(current.Allocate(100), 100);
                Assert.Equal(2, calls[0], "and through the object found there, after the table let go");
            }
            Assert.Equal(2, calls[1], "every block given back");
        });
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static void SetAndDrop(SystemMemoryResource system, int[] calls)
    {
        using (var callback = Counting(system, calls))
        using (var statistics = new StatisticsResourceAdaptor(callback))
        {
            DeviceResources.Current = statistics;
        }
    }
}
