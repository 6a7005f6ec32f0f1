// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.cmr.Cmr;
import org.cmr.CmrIllegalArgumentException;
import org.cmr.MemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.Status;
import org.cmr.SystemMemoryResource;
import org.junit.After;
import org.junit.Test;

/** The per-device resource table, shared with C, from Java. */
public class PerDeviceTest {
  @After
  public void resetTheTable() {
    Cmr.resetCurrentDeviceResource();
  }

  @Test
  public void setGetReset() {
    int device = Cmr.currentDevice();
    try (SystemMemoryResource system = new SystemMemoryResource()) {
      PoolMemoryResource pool = new PoolMemoryResource(system, 1 << 20);
      Cmr.setCurrentDeviceResource(pool);
      pool.close(); // the table holds a share of its own
      try (MemoryResource current = Cmr.getCurrentDeviceResource();
          MemoryResource same = Cmr.getPerDeviceResource(device)) {
        assertTrue(current instanceof PoolMemoryResource);
        assertTrue(current.isEqual(same));
        current.deallocate(current.allocate(100), 100);
      }
      Cmr.setPerDeviceResource(device, system);
      try (MemoryResource current = Cmr.getCurrentDeviceResource()) {
        assertTrue(current.isEqual(system));
      }
      Cmr.resetPerDeviceResource(device);
      try (MemoryResource fallback = Cmr.getCurrentDeviceResource()) {
        assertEquals(Cmr.builtWithCuda() ? "cuda" : "system", fallback.typeName());
      }
    }
  }

  @Test
  public void unknownDevices() {
    int count = Cmr.deviceCount();
    assertEquals(Status.ERROR_UNKNOWN_DEVICE,
        assertThrows(CmrIllegalArgumentException.class, () -> Cmr.getPerDeviceResource(count)).status());
    assertEquals(Status.ERROR_UNKNOWN_DEVICE,
        assertThrows(CmrIllegalArgumentException.class, () -> Cmr.resetPerDeviceResource(-1)).status());
  }

  @Test
  public void library() {
    assertTrue(Cmr.version().matches("\\d+\\.\\d+\\.\\d+"));
    assertTrue(Cmr.deviceCount() >= 1);
    assertTrue(Cmr.percentOfFreeDeviceMemory(10) % 256 == 0);
  }
}
