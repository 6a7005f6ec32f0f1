// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.cmr.CallbackMemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.StatisticsResourceAdaptor;
import org.cmr.SystemMemoryResource;
import org.junit.Test;

/** Java threads allocating and freeing through one stack at once, and freeing on another thread. */
public class ThreadsTest {
  private static final int THREADS = 8;
  private static final int PAIRS = 5000;

  @Test
  public void manyThreadsOneStack() throws Exception {
    try (SystemMemoryResource system = new SystemMemoryResource();
        PoolMemoryResource pool = new PoolMemoryResource(system, 1 << 20);
        StatisticsResourceAdaptor statistics = new StatisticsResourceAdaptor(pool)) {
      churnFromThreads(statistics);
    }
  }

  @Test
  public void manyThreadsThroughJavaCallbacks() throws Exception {
    try (SystemMemoryResource system = new SystemMemoryResource();
        CallbackMemoryResource callback = new CallbackMemoryResource(
            (bytes, stream) -> system.allocate(bytes, stream),
            (ptr, bytes, stream) -> system.deallocate(ptr, bytes, stream));
        StatisticsResourceAdaptor statistics = new StatisticsResourceAdaptor(callback)) {
      churnFromThreads(statistics);
    }
  }

  /** THREADS threads churning through {@code statistics} at once, which must count every pair. */
  private static void churnFromThreads(StatisticsResourceAdaptor statistics) throws Exception {
    ExecutorService threads = Executors.newFixedThreadPool(THREADS);
    try {
      List<Callable<Long>> work = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        long seed = t;
        work.add(() -> churn(statistics, new Random(seed)));
      }
      long bytes = 0;
      for (Future<Long> done : threads.invokeAll(work)) {
        bytes += done.get();
      }
      assertEquals((long) THREADS * PAIRS, statistics.allocationsTotal());
      assertEquals(bytes, statistics.bytesTotal());
      assertEquals(0, statistics.bytesCurrent());
      assertEquals(0, statistics.allocationsCurrent());
    } finally {
      threads.shutdown();
    }
  }

  /** Random sizes, up to 16 blocks live at once, each block written first; returns the bytes allocated. */
  private static long churn(StatisticsResourceAdaptor resource, Random random) {
    long[] ptrs = new long[16];
    long[] sizes = new long[16];
    long total = 0;
    for (int i = 0; i < PAIRS; i++) {
      int slot = random.nextInt(ptrs.length);
      if (ptrs[slot] != 0) {
        resource.deallocate(ptrs[slot], sizes[slot]);
      }
      sizes[slot] = 1 + random.nextInt(64 * 1024);
      ptrs[slot] = resource.allocate(sizes[slot]);
      total += sizes[slot];
    }
    for (int slot = 0; slot < ptrs.length; slot++) {
      if (ptrs[slot] != 0) {
        resource.deallocate(ptrs[slot], sizes[slot]);
      }
    }
    return total;
  }

  @Test
  public void freedOnAnotherThread() throws Exception {
    try (SystemMemoryResource system = new SystemMemoryResource();
        PoolMemoryResource pool = new PoolMemoryResource(system, 1 << 20);
        StatisticsResourceAdaptor statistics = new StatisticsResourceAdaptor(pool)) {
      BlockingQueue<Long> handedOver = new ArrayBlockingQueue<>(64);
      Thread freer = new Thread(() -> {
        try {
          for (int i = 0; i < PAIRS; i++) {
            statistics.deallocate(handedOver.take(), 512);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      freer.start();
      for (int i = 0; i < PAIRS; i++) {
        handedOver.put(statistics.allocate(512));
      }
      freer.join();
      assertEquals(PAIRS, statistics.allocationsTotal());
      assertEquals(0, statistics.allocationsCurrent());
    }
  }
}
