// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.cmr.CmrOutOfMemoryError;
import org.cmr.MemoryStats;
import org.cmr.OutOfMemoryEvent;
import org.cmr.OutOfMemoryObserver;
import org.cmr.PoolMemoryResource;
import org.cmr.StatisticsResourceAdaptor;
import org.cmr.SystemMemoryResource;
import org.junit.After;
import org.junit.Test;

/** MemoryResource.stats, resetPeakStats and the out-of-memory observer, from Java. */
public class MemoryStatsTest {
  private static final long MIB = 1 << 20;

  @After
  public void noObserver() {
    OutOfMemoryObserver.set(null);
  }

  @Test
  public void aPoolReportsItsUseAndItsFreeMemory() {
    try (SystemMemoryResource system = new SystemMemoryResource();
        PoolMemoryResource pool = new PoolMemoryResource(system, MIB, MIB)) {
      long a = pool.allocate(1000);
      long b = pool.allocate(3000);
      pool.deallocate(a, 1000);
      MemoryStats stats = pool.stats();
      assertEquals(3000, stats.bytesInUse());
      assertEquals(4000, stats.bytesInUsePeak());
      assertEquals(MIB, stats.bytesHeld());
      assertEquals(2, stats.allocations());
      assertEquals(1, stats.deallocations());
      assertEquals(MIB - 4096, stats.largestFreeBlock());
      assertEquals(2, stats.freeBlocks());
      assertEquals(1, stats.segments());
      assertTrue(stats.isSupported(MemoryStats.Field.LARGEST_FREE_BLOCK));
      assertFalse(stats.isSupported(MemoryStats.Field.POOL_BYTES_USED));
      assertEquals(0, stats.poolBytesUsed());
      pool.resetPeakStats();
      assertEquals(3000, pool.stats().bytesInUsePeak());
      pool.deallocate(b, 3000);
      assertEquals(0, pool.stats().bytesInUse());
    }
  }

  @Test
  public void theObserverIsToldOnceBeforeTheError() {
    List<OutOfMemoryEvent> events = new ArrayList<>();
    try (SystemMemoryResource system = new SystemMemoryResource();
        PoolMemoryResource pool = new PoolMemoryResource(system, MIB, MIB);
        StatisticsResourceAdaptor counted = new StatisticsResourceAdaptor(pool)) {
      OutOfMemoryObserver.set(events::add);
      CmrOutOfMemoryError error = assertThrows(CmrOutOfMemoryError.class, () -> counted.allocate(2 * MIB));
      assertEquals(1, events.size());
      OutOfMemoryEvent event = events.get(0);
      assertTrue(event.isFrom(pool));
      assertFalse(event.isFrom(counted));
      assertEquals("pool", event.resourceType());
      assertEquals(2 * MIB, event.bytes());
      assertEquals(MIB, event.stats().bytesHeld());
      assertTrue(event.message(), event.message().contains("free by stream"));
      assertTrue(error.getMessage().contains(event.message()));
      assertEquals(1, counted.stats().outOfMemoryCount());
      OutOfMemoryObserver.set(null);
      assertThrows(CmrOutOfMemoryError.class, () -> counted.allocate(2 * MIB));
      assertEquals(1, events.size());
    }
  }

  @Test
  public void whatTheObserverThrowsGoesToTheUncaughtExceptionHandler() {
    List<Throwable> reported = new ArrayList<>();
    Thread thread = Thread.currentThread();
    Thread.UncaughtExceptionHandler before = thread.getUncaughtExceptionHandler();
    thread.setUncaughtExceptionHandler((t, e) -> reported.add(e));
    IllegalStateException broken = new IllegalStateException("the observer broke");
    try (SystemMemoryResource system = new SystemMemoryResource();
        PoolMemoryResource pool = new PoolMemoryResource(system, MIB, MIB)) {
      OutOfMemoryObserver.set(
          event -> {
            throw broken;
          });
      assertThrows(CmrOutOfMemoryError.class, () -> pool.allocate(2 * MIB));
    } finally {
      thread.setUncaughtExceptionHandler(before);
    }
    assertEquals(1, reported.size());
    assertSame(broken, reported.get(0));
  }

  @Test
  public void theObserverCannotReplaceItself() {
    List<Throwable> refused = new ArrayList<>();
    try (SystemMemoryResource system = new SystemMemoryResource();
        PoolMemoryResource pool = new PoolMemoryResource(system, MIB, MIB)) {
      OutOfMemoryObserver.set(
          event -> refused.add(assertThrows(IllegalStateException.class, () -> OutOfMemoryObserver.set(null))));
      assertThrows(CmrOutOfMemoryError.class, () -> pool.allocate(2 * MIB));
    }
    assertEquals(1, refused.size());
  }
}
