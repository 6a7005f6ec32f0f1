// The C# binding's per-call cost: allocate+deallocate of 1000 bytes on the
// default stream through pool(system), warm, many pairs per repeat. Prints
// the best repeat (the least disturbed by the machine's other work) and
// every repeat after it.
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
            Run(pool, pairs / 10); // warm: the JIT, the pool's free lists
            var perPair = new double[repeats];
            for (int r = 0; r < repeats; r++) perPair[r] = Run(pool, pairs);
            Console.WriteLine("csharp: pool(system) 1000 B allocate+deallocate: {0:F0} ns/pair", perPair.Min());
            Console.WriteLine("  repeats of {0} pairs (ns/pair): {1}", pairs,
                              string.Join(" ", perPair.Select(ns => ns.ToString("F0"))));
        }
        return 0;
    }

    private static double Run(MemoryResource pool, int pairs)
    {
        var clock = Stopwatch.StartNew();
        for (int i = 0; i < pairs; i++)
        {
            IntPtr ptr = pool.Allocate(Bytes);
            pool.Deallocate(ptr, Bytes);
        }
        clock.Stop();
        return clock.Elapsed.TotalMilliseconds * 1e6 / pairs;
    }
}
