// SPDX-License-Identifier: Apache-2.0
package org.cmr.bench;

import org.cmr.MemoryResource;

/**
 * The per-call cost of the Java binding: allocate + deallocate of 1000 bytes on the default
 * stream through pool(system), warm, in several timed repeats. Prints the best repeat as
 * "java: pool(system) 1000 B allocate+deallocate: N ns/pair" (the C peer is cmr-bench-call).
 *
 * <p>Arguments: [pairs per repeat (default 2,000,000)] [repeats (default 7)].
 */
public final class PoolPairBench {
  private static final long BYTES = 1000;
  private static final String STACK = "pool(system, initial_pool_size=64MiB)";

  private PoolPairBench() {}

  public static void main(String[] args) {
    long pairs = args.length > 0 ? Long.parseLong(args[0]) : 2_000_000L;
    int repeats = args.length > 1 ? Integer.parseInt(args[1]) : 7;
    try (MemoryResource pool = MemoryResource.parse(STACK)) {
      run(pool, pairs); // warm-up: the JIT compiles the loop and the pool holds its free block
      double best = Double.MAX_VALUE;
      StringBuilder all = new StringBuilder();
      for (int repeat = 0; repeat < repeats; repeat++) {
        long start = System.nanoTime();
        run(pool, pairs);
        double perPair = (double) (System.nanoTime() - start) / pairs;
        best = Math.min(best, perPair);
        all.append(repeat == 0 ? "" : ", ").append(String.format("%.1f", perPair));
      }
      System.out.printf("java: pool(system) %d B allocate+deallocate: %.1f ns/pair (best of %d repeats of %d pairs: %s)%n",
          BYTES, best, repeats, pairs, all);
    }
  }

  private static void run(MemoryResource pool, long pairs) {
    for (long i = 0; i < pairs; i++) {
      long ptr = pool.allocate(BYTES);
      pool.deallocate(ptr, BYTES);
    }
  }
}
