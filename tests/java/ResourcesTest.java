// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeFalse;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.EnumSet;
import java.util.List;
import org.cmr.AlignedResourceAdaptor;
import org.cmr.ArenaMemoryResource;
import org.cmr.BinningMemoryResource;
import org.cmr.Cmr;
import org.cmr.CmrIllegalArgumentException;
import org.cmr.FixedSizeMemoryResource;
import org.cmr.LimitingResourceAdaptor;
import org.cmr.LoggingResourceAdaptor;
import org.cmr.MemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.PrefetchResourceAdaptor;
import org.cmr.Property;
import org.cmr.SimulatedMemoryResource;
import org.cmr.StatisticsResourceAdaptor;
import org.cmr.Status;
import org.cmr.SystemMemoryResource;
import org.cmr.ThreadSafeResourceAdaptor;
import org.cmr.TrackingResourceAdaptor;
import org.junit.Rule;
import org.junit.Test;

/**
 * Every resource the host build has, made with all its parameters and with each run of defaults
 * left out, allocating and freeing through it; its typed methods read back what it was given.
 */
public class ResourcesTest {
  private static final long MIB = 1 << 20;

  /** Counts what reaches host memory: every test must give it all back. */
  @Rule public final CountedSystem counted = new CountedSystem();

  private final StatisticsResourceAdaptor host = counted.resource();
  private final SystemMemoryResource system = counted.system();

  /** Allocates and frees through each resource: 1000 bytes at 256, and 0 bytes. */
  private static void exercise(MemoryResource... resources) {
    for (MemoryResource resource : resources) {
      long ptr = resource.allocate(1000);
      assertNotEquals(0, ptr);
      assertEquals("256-byte aligned", 0, ptr % Cmr.DEFAULT_ALIGNMENT);
      resource.deallocate(ptr, 1000);
      assertEquals(0, resource.allocate(0));
    }
  }

  @Test
  public void system() {
    exercise(system);
    assertEquals("system", system.typeName());
    assertTrue(system.properties().contains(Property.HOST_ACCESSIBLE));
  }

  @Test
  public void simulated() {
    try (SimulatedMemoryResource simulated = new SimulatedMemoryResource(4 * MIB);
        SimulatedMemoryResource big = new SimulatedMemoryResource()) {
      long ptr = simulated.allocate(MIB);
      assertEquals(MIB, simulated.bytesInUse());
      simulated.deallocate(ptr, MIB);
      assertEquals(MIB, simulated.peakBytesInUse());
      assertEquals(1, simulated.allocationCount());
      assertEquals(1, simulated.deallocationCount());
      assertEquals(EnumSet.of(Property.DEVICE_ACCESSIBLE), simulated.properties());
      exercise(big);
    }
  }

  @Test
  public void pool() {
    try (PoolMemoryResource all = new PoolMemoryResource(host, MIB, 4 * MIB);
        PoolMemoryResource initial = new PoolMemoryResource(host, MIB)) {
      exercise(all, initial);
      assertEquals(MIB, all.poolSize());
      assertEquals(MIB, all.freeSize());
      assertSame(host, all.upstream());
    }
    // The default initial size is half of free memory: taken from a simulated device.
    try (SimulatedMemoryResource device = new SimulatedMemoryResource();
        PoolMemoryResource defaults = new PoolMemoryResource(device)) {
      assertTrue(defaults.poolSize() > 0);
      assertEquals(defaults.poolSize(), device.bytesInUse());
    }
  }

  @Test
  public void arena() {
    File dump = new File(System.getProperty("java.io.tmpdir"), "cmr-arena-test-" + ProcessHandle.current().pid());
    try (ArenaMemoryResource all = new ArenaMemoryResource(host, 2 * MIB, true, dump.getPath());
        ArenaMemoryResource dumped = new ArenaMemoryResource(host, 2 * MIB, false);
        ArenaMemoryResource sized = new ArenaMemoryResource(host, 2 * MIB)) {
      exercise(all, dumped, sized);
      assertEquals(2 * MIB, all.arenaSize());
      assertTrue(all.globalFreeBytes() <= 2 * MIB);
      all.dump();
      assertTrue("the dump went to dump_path", dump.length() > 0);
    } finally {
      assertTrue(dump.delete() || !dump.exists());
    }
    try (SimulatedMemoryResource device = new SimulatedMemoryResource();
        ArenaMemoryResource defaults = new ArenaMemoryResource(device)) {
      assertEquals(defaults.arenaSize(), device.bytesInUse());
    }
  }

  @Test
  public void binning() {
    try (BinningMemoryResource automatic = new BinningMemoryResource(host, 10, 12);
        BinningMemoryResource upstreamOnly = new BinningMemoryResource(host);
        BinningMemoryResource minimumOnly = new BinningMemoryResource(host, -1);
        FixedSizeMemoryResource bin = new FixedSizeMemoryResource(host, 8192, 4)) {
      assertEquals(3, automatic.binCount());
      assertEquals(1024, automatic.binSizeFor(1000));
      assertEquals(0, automatic.binSizeFor(5000));
      exercise(automatic);
      assertEquals(0, upstreamOnly.binCount());
      upstreamOnly.addBin(512);
      upstreamOnly.addBinResource(8192, bin);
      assertEquals(2, upstreamOnly.binCount());
      assertEquals(8192, upstreamOnly.binSizeFor(5000));
      exercise(upstreamOnly, minimumOnly);
    }
  }

  @Test
  public void fixedSize() {
    try (FixedSizeMemoryResource all = new FixedSizeMemoryResource(host, 4096, 8);
        FixedSizeMemoryResource sized = new FixedSizeMemoryResource(host, 1000);
        FixedSizeMemoryResource defaults = new FixedSizeMemoryResource(host)) {
      assertEquals(4096, all.blockSize());
      assertEquals(8 * 4096, all.upstreamBytes());
      assertEquals("rounded up to 256", 1024, sized.blockSize());
      assertEquals(MIB, defaults.blockSize());
      exercise(all, sized, defaults);
    }
  }

  @Test
  public void nullAsksForTheDefaultAndEveryValueIsAValue() {
    try (FixedSizeMemoryResource blocks = new FixedSizeMemoryResource(host, null, 4L);
        BinningMemoryResource binning = new BinningMemoryResource(host, null, null);
        SimulatedMemoryResource simulated = new SimulatedMemoryResource((Long) null)) {
      assertEquals(MIB, blocks.blockSize());
      assertEquals(4 * MIB, blocks.upstreamBytes());
      assertEquals(0, binning.binCount());
      long ptr = simulated.allocate(1L << 40); // its default capacity, 1 TiB, counted not used
      assertEquals(1L << 40, simulated.bytesInUse());
      simulated.deallocate(ptr, 1L << 40);
    }
    // The extremes that once meant "default" are values, refused by the resource.
    CmrIllegalArgumentException minimum =
        assertThrows(CmrIllegalArgumentException.class, () -> new BinningMemoryResource(host, 10, Integer.MIN_VALUE).close());
    assertEquals(Status.ERROR_INVALID_ARGUMENT, minimum.status());
    assertTrue(minimum.getMessage(), minimum.getMessage().contains("max_size_exponent -2147483648 is outside"));
    CmrIllegalArgumentException huge =
        assertThrows(CmrIllegalArgumentException.class, () -> new FixedSizeMemoryResource(host, Long.MAX_VALUE, null).close());
    assertEquals(Status.ERROR_SIZE_OVERFLOW, huge.status());
    assertThrows(IllegalArgumentException.class, () -> new FixedSizeMemoryResource(host, -1L, null).close());
    assertThrows(IllegalArgumentException.class, () -> new FixedSizeMemoryResource(host, -1L).close());
  }

  @Test
  public void aligned() {
    try (AlignedResourceAdaptor all = new AlignedResourceAdaptor(host, 4096, 512);
        AlignedResourceAdaptor alignment = new AlignedResourceAdaptor(host, 4096);
        AlignedResourceAdaptor defaults = new AlignedResourceAdaptor(host)) {
      long ptr = all.allocate(1000);
      assertEquals(0, ptr % 4096);
      all.deallocate(ptr, 1000);
      assertEquals(4096, all.allocationAlignment());
      assertEquals(512, all.alignmentThreshold());
      assertEquals(65536, alignment.alignmentThreshold());
      assertEquals(256, defaults.allocationAlignment());
      exercise(alignment, defaults);
    }
  }

  @Test
  public void limiting() {
    try (LimitingResourceAdaptor all = new LimitingResourceAdaptor(host, MIB, 1024);
        LimitingResourceAdaptor defaults = new LimitingResourceAdaptor(host, MIB)) {
      long ptr = all.allocate(1000);
      assertEquals("counted rounded up to 1024", 1024, all.allocatedBytes());
      all.deallocate(ptr, 1000);
      assertEquals(MIB, defaults.allocationLimit());
      exercise(defaults);
      assertEquals(0, defaults.allocatedBytes());
    }
  }

  @Test
  public void logging() throws IOException {
    File log = File.createTempFile("cmr-logging-test", ".csv");
    try {
      try (LoggingResourceAdaptor flushed = new LoggingResourceAdaptor(host, log.getPath(), true)) {
        exercise(flushed);
        assertEquals(log.getPath(), flushed.filename());
        assertEquals(0, flushed.lostRows());
        List<String> rows = Files.readAllLines(log.toPath());
        assertEquals("Thread,Time,Action,Pointer,Size,Stream", rows.get(0));
        assertEquals("a row per allocate and per free", 3, rows.size());
      }
      try (LoggingResourceAdaptor named = new LoggingResourceAdaptor(host, log.getPath())) {
        exercise(named);
        named.flush();
      }
    } finally {
      assertTrue(log.delete());
    }
  }

  @Test
  public void loggingWithoutADestinationNeedsTheEnvironment() {
    assumeFalse(System.getenv().containsKey("CMR_LOG_FILE"));
    CmrIllegalArgumentException e = assertThrows(CmrIllegalArgumentException.class, () -> new LoggingResourceAdaptor(host).close());
    assertEquals(Status.ERROR_INVALID_ARGUMENT, e.status());
  }

  @Test
  public void statistics() {
    try (StatisticsResourceAdaptor statistics = new StatisticsResourceAdaptor(host)) {
      exercise(statistics);
      assertEquals(1, statistics.allocationsTotal());
      assertEquals(1000, statistics.bytesTotal());
    }
  }

  @Test
  public void tracking() {
    try (TrackingResourceAdaptor stacks = new TrackingResourceAdaptor(host, true);
        TrackingResourceAdaptor defaults = new TrackingResourceAdaptor(host)) {
      long ptr = stacks.allocate(1000);
      assertEquals(1000, stacks.allocatedBytes());
      assertEquals(1, stacks.outstandingCount());
      assertTrue(stacks.outstandingReport().contains(Long.toHexString(ptr)));
      // The snapshot's records, one field at a time.
      assertEquals(1, stacks.outstandingSnapshot());
      assertEquals(ptr, stacks.snapshotPointer(0));
      assertEquals(1000, stacks.snapshotBytes(0));
      assertEquals(256, stacks.snapshotAlignment(0));
      assertEquals(0, stacks.snapshotStream(0));
      assertTrue(stacks.snapshotStack(0).startsWith("#0 in "));
      CmrIllegalArgumentException past = assertThrows(CmrIllegalArgumentException.class, () -> stacks.snapshotBytes(1));
      assertTrue(past.getMessage(), past.getMessage().contains("index 1 is past the snapshot's 1 allocations"));
      stacks.deallocate(ptr, 1000);
      assertEquals(0, stacks.outstandingSnapshot());
      assertEquals(0, stacks.outstandingCount());
      exercise(defaults);
    }
  }

  @Test
  public void prefetchAndThreadSafe() {
    try (PrefetchResourceAdaptor prefetch = new PrefetchResourceAdaptor(host);
        ThreadSafeResourceAdaptor threadSafe = new ThreadSafeResourceAdaptor(host)) {
      exercise(prefetch, threadSafe);
    }
  }

  @Test
  public void anObjectTakenFromARefHasItsClass() {
    try (PoolMemoryResource pool = new PoolMemoryResource(host, MIB);
        MemoryResource top = MemoryResource.parse("statistics(pool(system, initial_pool_size=1MiB))")) {
      assertTrue(top instanceof StatisticsResourceAdaptor);
      assertNull(((StatisticsResourceAdaptor) top).upstream());
      exercise(top);
      assertFalse(pool.isEqual(top));
      assertTrue(pool.isEqual(pool));
    }
  }

  @Test
  public void poolFragmentationToolsReturnMemoryToTheUpstream() {
    try (SimulatedMemoryResource upstream = new SimulatedMemoryResource(1L << 30);
        PoolMemoryResource pool = new PoolMemoryResource(upstream, (Long) 0L, null, (Long) MIB)) {
      long a = pool.allocate(4 * MIB); // a chunk of the request's size
      long b = pool.allocate(256); // doubling would take 4 MiB more; maximumGrowth caps it at 1 MiB
      assertEquals(5 * MIB, pool.poolSize());
      assertEquals(5 * MIB, upstream.bytesInUse());
      assertEquals(MIB - 256, pool.largestFreeBlock());
      pool.deallocate(a, 4 * MIB);
      assertEquals(4 * MIB, pool.largestFreeBlock());
      pool.release(); // the 4 MiB chunk is wholly free: back to the upstream
      assertEquals(MIB, pool.poolSize());
      assertEquals(MIB, upstream.bytesInUse());
      pool.deallocate(b, 256);
      assertEquals(MIB, pool.largestFreeBlock());
      pool.release();
      assertEquals(0, pool.poolSize());
      assertEquals(0, upstream.bytesInUse());
      assertEquals(0, pool.largestFreeBlock());
    }
  }

  @Test
  public void arenaAndBinningReportTheirLargestFreeBlock() {
    try (SimulatedMemoryResource upstream = new SimulatedMemoryResource(1L << 30);
        ArenaMemoryResource arena = new ArenaMemoryResource(upstream, 4 * MIB);
        BinningMemoryResource binning = new BinningMemoryResource(upstream, 8, 10)) {
      assertEquals(4 * MIB, arena.largestFreeBlock());
      long ptr = arena.allocate(1000); // a 1 MiB superblock leaves the global arena
      assertEquals(3 * MIB, arena.largestFreeBlock());
      arena.deallocate(ptr, 1000);
      assertEquals(1024, binning.largestFreeBlock()); // the largest bin's preallocated blocks
    }
  }
}
