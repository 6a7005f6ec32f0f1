// SPDX-License-Identifier: Apache-2.0
// The C# binding's per-call cost: allocate+deallocate of 1000 bytes on the
// default stream through pool(system), warm, many pairs per repeat, by the
// public API (MemoryResource.Allocate/Deallocate) and, as the peer in the
// same process, by the native module's call alone (the P/Invoke of SWIG's
// wrapper, without the handle's lease or the guard of outstanding blocks).
// Prints the best repeat of each (the least disturbed by the machine's
// other work) and every repeat.
//
//   mono CmrBench.exe [pairs per repeat] [repeats]
using System;
using System.Diagnostics;
using System.Linq;
using Cmr;

internal static class BenchCall
{
    private const ulong Bytes = 1000;

    private static int Main(string[] args)
    {
        int pairs = args.Length > 0 ? int.Parse(args[0]) : 2000000;
        int repeats = args.Length > 1 ? int.Parse(args[1]) : 7;
        using (var stack = new ResourceStack("pool(system, initial_pool_size=64MiB)"))
        using (MemoryResource pool = stack.Top)
        {
            Ref native = pool.Handle.Ref;
            Report("pool(system) 1000 B allocate+deallocate", pairs, repeats, () => PublicPairs(pool, pairs));
            Report("pool(system) 1000 B, the native call alone", pairs, repeats, () => NativePairs(native, pairs));
        }
        return 0;
    }

    private static void Report(string what, int pairs, int repeats, Action run)
    {
        run(); // warm: the JIT, the pool's free lists
        var perPair = new double[repeats];
        for (int r = 0; r < repeats; r++)
        {
            var clock = Stopwatch.StartNew();
            run();
            perPair[r] = clock.Elapsed.TotalMilliseconds * 1e6 / pairs;
        }
        Console.WriteLine("csharp: {0}: {1:F0} ns/pair", what, perPair.Min());
        Console.WriteLine("  repeats of {0} pairs (ns/pair): {1}", pairs,
                          string.Join(" ", perPair.Select(ns => ns.ToString("F0"))));
    }

    private static void PublicPairs(MemoryResource pool, int pairs)
    {
        for (int i = 0; i < pairs; i++)
        {
            IntPtr ptr = pool.Allocate(Bytes);
            pool.Deallocate(ptr, Bytes);
        }
    }

    private static void NativePairs(Ref pool, int pairs)
    {
        for (int i = 0; i < pairs; i++)
        {
            IntPtr ptr;
            CmrNative.cmr_allocate(pool, Bytes, IntPtr.Zero, out ptr);
            CmrNative.cmr_deallocate(pool, ptr, Bytes, IntPtr.Zero);
        }
    }
}
