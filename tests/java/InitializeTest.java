// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import org.cmr.Allocation;
import org.cmr.AllocationMode;
import org.cmr.Cmr;
import org.cmr.CmrFailure;
import org.cmr.CmrIllegalArgumentException;
import org.cmr.DeviceBuffer;
import org.cmr.MemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.Status;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** Cmr.initialize / shutdown / isInitialized: the one-call set-up of the current device's resource. */
public class InitializeTest {
  private static final String DEVICE = Cmr.builtWithCuda() ? "cuda" : "system";

  /** The modes are over the device's memory: a CUDA build needs a device (the host build's is host memory). */
  @Before
  public void needsDeviceMemory() {
    assumeTrue("no CUDA device", !Cmr.builtWithCuda() || devices() > 0);
  }

  private static int devices() {
    try {
      return Cmr.deviceCount();
    } catch (RuntimeException e) {
      assertTrue(e.toString(), e instanceof CmrFailure); // no driver: NO_DEVICE
      return 0;
    }
  }

  @After
  public void shutDown() {
    Cmr.shutdown();
  }

  private static String currentType() {
    try (MemoryResource current = Cmr.getCurrentDeviceResource()) {
      return current.typeName();
    }
  }

  @Test
  public void poolModeSetsUpAndShutdownTakesDown() {
    String before = currentType();
    assertFalse(Cmr.isInitialized());
    Cmr.initialize(AllocationMode.POOL, 1 << 20, 4 << 20);
    assertTrue(Cmr.isInitialized());
    try (MemoryResource current = Cmr.getCurrentDeviceResource()) {
      PoolMemoryResource pool = (PoolMemoryResource) current;
      assertEquals(1 << 20, pool.poolSize());
      try (Allocation block = pool.allocation(1000)) {
        assertEquals(1000, block.getSize());
      }
    }
    Cmr.shutdown();
    assertFalse(Cmr.isInitialized());
    assertEquals(before, currentType());
    Cmr.shutdown(); // not initialized: nothing to do
  }

  @Test
  public void aStackExpression() {
    Cmr.initialize("statistics(pool(system, initial_pool_size=64KiB))");
    assertEquals("statistics", currentType());
  }

  @Test
  public void theModesAndTheirSizes() {
    Cmr.initialize(AllocationMode.DEFAULT);
    assertEquals(DEVICE, currentType());
    Cmr.shutdown();
    Cmr.initialize(AllocationMode.ARENA, 1 << 20);
    assertEquals("arena", currentType());
    Cmr.shutdown();
    Cmr.initialize(AllocationMode.POOL);
    assertEquals("pool", currentType());
  }

  @Test
  public void aSecondInitializeIsIllegalState() {
    Cmr.initialize(AllocationMode.POOL, 1 << 20);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> Cmr.initialize(AllocationMode.DEFAULT));
    assertTrue(e.getMessage(), e.getMessage().contains("already initialized (pool(" + DEVICE));
    assertEquals("pool", currentType());
  }

  @Test
  public void badArgumentsAreIllegalArgumentsAndSetNothingUp() {
    assertThrows(IllegalArgumentException.class, () -> Cmr.initialize(AllocationMode.POOL, -1));
    assertThrows(IllegalArgumentException.class, () -> Cmr.initialize(AllocationMode.DEFAULT, 1 << 20));
    assertThrows(IllegalArgumentException.class, () -> Cmr.initialize(AllocationMode.ARENA, 1 << 20, 1 << 21));
    CmrIllegalArgumentException odd =
        assertThrows(CmrIllegalArgumentException.class, () -> Cmr.initialize(AllocationMode.POOL, 1000));
    assertEquals(Status.ERROR_INVALID_ARGUMENT, odd.status());
    assertThrows(CmrIllegalArgumentException.class, () -> Cmr.initialize("pool(nonesuch)"));
    assertThrows(NullPointerException.class, () -> Cmr.initialize((String) null));
    assertThrows(NullPointerException.class, () -> Cmr.initialize((AllocationMode) null));
    assertFalse(Cmr.isInitialized());
  }

  @Test
  public void cudaOnlyModesAreRefusedOnTheHostBuild() {
    assumeTrue("the host build refuses them", !Cmr.builtWithCuda());
    for (AllocationMode mode : new AllocationMode[] {AllocationMode.ASYNC, AllocationMode.MANAGED, AllocationMode.MANAGED_POOL}) {
      Throwable e = assertThrows(RuntimeException.class, () -> Cmr.initialize(mode));
      assertTrue(mode + ": " + e, e instanceof CmrFailure);
      assertFalse(mode.toString(), Cmr.isInitialized());
    }
  }

  @Test
  public void buffersOutliveShutdown() {
    Cmr.initialize(AllocationMode.POOL, 1 << 20);
    DeviceBuffer buffer;
    try (MemoryResource current = Cmr.getCurrentDeviceResource()) {
      buffer = new DeviceBuffer(new byte[] {4, 5, 6}, current);
    }
    Cmr.shutdown();
    assertEquals(3, buffer.getSize());
    assertEquals(6, buffer.toByteArray()[2]);
    buffer.close();
  }
}
