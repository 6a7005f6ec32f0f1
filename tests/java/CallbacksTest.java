// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicLong;
import org.cmr.CallbackMemoryResource;
import org.cmr.Cmr;
import org.cmr.CmrOutOfMemoryError;
import org.cmr.FailureCallbackResourceAdaptor;
import org.cmr.LimitingResourceAdaptor;
import org.cmr.MemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.Property;
import org.cmr.StatisticsResourceAdaptor;
import org.junit.Rule;
import org.junit.Test;

/** Java callbacks behind the callback resource and the failure callback adaptor. */
public class CallbacksTest {
  @Rule public final CountedSystem host = new CountedSystem();

  private final StatisticsResourceAdaptor counted = host.resource();
  private final AtomicLong allocations = new AtomicLong();
  private final AtomicLong deallocations = new AtomicLong();

  /** A callback resource over the counted host memory, counting its calls. */
  private CallbackMemoryResource forwarding() {
    return new CallbackMemoryResource(
        (bytes, stream) -> {
          allocations.incrementAndGet();
          return counted.allocate(bytes, stream);
        },
        (ptr, bytes, stream) -> {
          deallocations.incrementAndGet();
          counted.deallocate(ptr, bytes, stream);
        },
        EnumSet.of(Property.HOST_ACCESSIBLE));
  }

  @Test
  public void allocatesThroughJava() {
    try (CallbackMemoryResource callback = forwarding()) {
      long ptr = callback.allocate(1000);
      assertEquals(1000, counted.bytesCurrent());
      callback.deallocate(ptr, 1000);
      assertEquals(1, allocations.get());
      assertEquals(1, deallocations.get());
      assertEquals(EnumSet.of(Property.HOST_ACCESSIBLE), callback.properties());
      assertEquals("callback", callback.typeName());
    }
    try (CallbackMemoryResource defaults = new CallbackMemoryResource((bytes, stream) -> 0, (ptr, bytes, stream) -> {})) {
      assertEquals(EnumSet.of(Property.DEVICE_ACCESSIBLE), defaults.properties());
    }
  }

  @Test
  public void aPoolOverCallbacksGivesItsChunkBackThroughThem() {
    CallbackMemoryResource callback = forwarding();
    PoolMemoryResource pool = new PoolMemoryResource(callback, 1 << 20);
    callback.close(); // the pool holds it, and its Java callbacks with it
    pool.deallocate(pool.allocate(1000), 1000);
    assertEquals(1 << 20, counted.bytesCurrent());
    pool.close();
    assertEquals(1, deallocations.get());
  }

  @Test
  public void zeroFromAllocateIsOutOfMemory() {
    try (CallbackMemoryResource none = new CallbackMemoryResource((bytes, stream) -> 0, (ptr, bytes, stream) -> {})) {
      CmrOutOfMemoryError e = assertThrows(CmrOutOfMemoryError.class, () -> none.allocate(64));
      assertTrue(e.getMessage(), e.getMessage().contains("returned NULL for 64 bytes"));
    }
  }

  @Test
  public void exceptionsOfCallbacksReachTheCaller() {
    IllegalStateException refused = new IllegalStateException("refused");
    IllegalStateException kept = new IllegalStateException("kept");
    AtomicLong calls = new AtomicLong();
    try (CallbackMemoryResource throwing = new CallbackMemoryResource(
        (bytes, stream) -> {
          if (calls.incrementAndGet() == 2) return 4096L; /* one block, to free (the resource only frees its own) */
          throw refused;
        },
        (ptr, bytes, stream) -> {
          throw kept;
        })) {
      assertSame(refused, assertThrows(IllegalStateException.class, () -> throwing.allocate(64)));
      long block = throwing.allocate(64);
      assertSame(kept, assertThrows(IllegalStateException.class, () -> throwing.deallocate(block, 64)));
      assertSame(refused, assertThrows(IllegalStateException.class, () -> throwing.allocate(64)));
    }
  }

  @Test
  public void aFailureCallbackRetries() {
    try (LimitingResourceAdaptor limited = new LimitingResourceAdaptor(counted, 4096)) {
      long[] held = {limited.allocate(4096)};
      AtomicLong calls = new AtomicLong();
      try (FailureCallbackResourceAdaptor freeing = new FailureCallbackResourceAdaptor(limited, bytes -> {
        calls.incrementAndGet();
        if (held[0] == 0) {
          return false;
        }
        limited.deallocate(held[0], 4096);
        held[0] = 0;
        return true;
      })) {
        long ptr = freeing.allocate(4096);
        assertEquals("freed one block, then the retry was served", 1, calls.get());
        assertThrows(CmrOutOfMemoryError.class, () -> freeing.allocate(4096));
        assertEquals("nothing left to free: gave up", 2, calls.get());
        freeing.deallocate(ptr, 4096);
        assertSame(limited, freeing.upstream());
      }
    }
  }

  @Test
  public void aFailureCallbackThatThrows() {
    try (LimitingResourceAdaptor limited = new LimitingResourceAdaptor(counted, 256);
        FailureCallbackResourceAdaptor throwing = new FailureCallbackResourceAdaptor(limited, bytes -> {
          throw new UnsupportedOperationException("no retries for " + bytes);
        })) {
      UnsupportedOperationException e =
          assertThrows(UnsupportedOperationException.class, () -> throwing.allocate(512));
      assertEquals("no retries for 512", e.getMessage());
    }
    assertThrows(NullPointerException.class, () -> new FailureCallbackResourceAdaptor(counted, null));
  }

  /** A pool over callbacks, set as the current device's resource, every Java object dropped. */
  private void installUnreferenced() {
    Cmr.setCurrentDeviceResource(new PoolMemoryResource(forwarding(), 1 << 20));
  }

  @Test
  public void theTableKeepsJavaCallbacksAlive() throws InterruptedException {
    try {
      installUnreferenced();
      for (int i = 0; i < 5; i++) {
        System.gc();
        Thread.sleep(10);
      }
      try (MemoryResource current = Cmr.getCurrentDeviceResource()) {
        current.deallocate(current.allocate(2 << 20), 2 << 20); // past the chunk: the pool asks Java
      }
      assertEquals(2, allocations.get());
    } finally {
      Cmr.resetCurrentDeviceResource();
    }
    for (int attempt = 0; attempt < 200 && counted.bytesCurrent() != 0; attempt++) {
      System.gc();
      Thread.sleep(10);
    }
  }

  /** Callbacks under a pool, all dropped unclosed: the Cleaner must free the pool first. */
  private void dropUnclosed() {
    PoolMemoryResource pool = new PoolMemoryResource(forwarding(), 1 << 20);
    pool.deallocate(pool.allocate(100), 100);
  }

  @Test
  public void theCleanerFreesThePoolBeforeItsCallbacks() throws InterruptedException {
    dropUnclosed();
    for (int attempt = 0; attempt < 200 && counted.bytesCurrent() != 0; attempt++) {
      System.gc();
      Thread.sleep(10);
    }
    assertEquals("the pool gave its chunk back through Java", 1, deallocations.get());
  }
}
