// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.cmr.Cmr;
import org.cmr.DeviceBuffer;
import org.cmr.LimitingResourceAdaptor;
import org.cmr.MemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.ResourceStack;
import org.cmr.SimulatedMemoryResource;
import org.cmr.StatisticsResourceAdaptor;
import org.cmr.SystemMemoryResource;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Closing in every order, upstreams before adaptors included, crashes nothing and gives every
 * byte back: a simulated device at the bottom, closed last, counts what it still lends.
 */
public class LifetimeTest {
  private static final long MIB = 1 << 20;

  private SimulatedMemoryResource device;

  @Before
  public void makeDevice() {
    device = new SimulatedMemoryResource(64 * MIB);
  }

  @After
  public void everythingCameBack() {
    assertEquals("bytes the device still lends", 0, device.bytesInUse());
    assertEquals(device.allocationCount(), device.deallocationCount());
    device.close();
  }

  /** pool over the device, statistics over the pool, limiting over statistics: bottom first. */
  private List<MemoryResource> stack() {
    List<MemoryResource> stack = new ArrayList<>();
    stack.add(new PoolMemoryResource(device, MIB));
    stack.add(new StatisticsResourceAdaptor(stack.get(0)));
    stack.add(new LimitingResourceAdaptor(stack.get(1), 8 * MIB));
    return stack;
  }

  /** Every order of 0..n-1 (ReleaseOrdersTest uses it too). */
  static List<int[]> permutations(int n) {
    List<int[]> all = new ArrayList<>();
    permute(new int[n], new boolean[n], 0, all);
    return all;
  }

  private static void permute(int[] order, boolean[] used, int at, List<int[]> all) {
    if (at == order.length) {
      all.add(order.clone());
      return;
    }
    for (int i = 0; i < order.length; i++) {
      if (!used[i]) {
        used[i] = true;
        order[at] = i;
        permute(order, used, at + 1, all);
        used[i] = false;
      }
    }
  }

  @Test
  public void closingInEveryOrder() {
    for (int[] order : permutations(3)) {
      List<MemoryResource> stack = stack();
      MemoryResource top = stack.get(2);
      long ptr = top.allocate(4096);
      top.deallocate(ptr, 4096);
      for (int index : order) {
        stack.get(index).close();
      }
      assertEquals("the pool gave its chunk back", 0, device.bytesInUse());
    }
  }

  @Test
  public void anAdaptorOutlivesItsClosedUpstreams() {
    List<MemoryResource> stack = stack();
    MemoryResource top = stack.get(2);
    stack.get(0).close();
    stack.get(1).close();
    long ptr = top.allocate(4096);
    assertEquals("the pool is still there", MIB, device.bytesInUse());
    top.deallocate(ptr, 4096);
    top.close();
  }

  @Test
  public void aBufferOutlivesItsResource() {
    try (SystemMemoryResource system = new SystemMemoryResource();
        StatisticsResourceAdaptor counted = new StatisticsResourceAdaptor(system)) {
      PoolMemoryResource pool = new PoolMemoryResource(counted, MIB);
      DeviceBuffer buffer = new DeviceBuffer(new byte[] {1, 2, 3}, pool);
      pool.close();
      buffer.resize(5000);
      assertArrayEquals(new byte[] {1, 2, 3}, java.util.Arrays.copyOf(buffer.toByteArray(), 3));
      buffer.close();
      assertEquals("the pool went with the buffer", 0, counted.bytesCurrent());
    }
  }

  @Test
  public void aStackTopOutlivesTheStack() {
    MemoryResource top;
    try (ResourceStack stack = new ResourceStack("statistics(pool(system, initial_pool_size=1MiB))")) {
      top = stack.top();
    }
    try (top) {
      top.deallocate(top.allocate(100), 100);
    }
  }

  @Test
  public void objectsTakenFromRefsHoldOneShareEach() {
    PoolMemoryResource pool = new PoolMemoryResource(device, MIB);
    DeviceBuffer buffer = new DeviceBuffer(1000, pool); // no bytes copied: the device has no memory behind its addresses
    MemoryResource first = buffer.getResource();
    MemoryResource second = buffer.getResource();
    Cmr.setCurrentDeviceResource(pool);
    MemoryResource third = Cmr.getCurrentDeviceResource();
    Cmr.resetCurrentDeviceResource();
    pool.close();
    buffer.close();
    for (MemoryResource resource : List.of(first, second, third)) {
      resource.deallocate(resource.allocate(100), 100); // no close took another's share
    }
    first.close();
    second.close();
    assertEquals("the pool is still there", MIB, device.bytesInUse());
    third.close();
    assertEquals("the pool went with its last share", 0, device.bytesInUse());
  }

  /** Objects made and dropped without close, for the Cleaner to release. */
  private void dropUnclosed() {
    MemoryResource pool = new PoolMemoryResource(device, MIB);
    new StatisticsResourceAdaptor(pool).allocate(0);
    new DeviceBuffer(1000, pool);
  }

  @Test
  public void theCleanerReleasesWhatWasNotClosed() throws InterruptedException {
    dropUnclosed();
    assertEquals(MIB, device.bytesInUse());
    for (int attempt = 0; attempt < 200 && device.bytesInUse() != 0; attempt++) {
      System.gc();
      Thread.sleep(10);
    }
    assertEquals("the Cleaner released the pool, its adaptor and the buffer", 0, device.bytesInUse());
  }

  @Test
  public void closedObjectsSayWhatTheyWere() {
    PoolMemoryResource pool = new PoolMemoryResource(device, MIB);
    assertEquals("PoolMemoryResource(pool)", pool.toString());
    pool.close();
    assertEquals("PoolMemoryResource(closed)", pool.toString());
    assertTrue(pool.isClosed());
  }
}
