package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;

import org.cmr.PoolMemoryResource;
import org.cmr.SystemMemoryResource;
import org.junit.Test;

public class ResourcesTest {
  @Test
  public void poolOverSystem() {
    try (SystemMemoryResource system = new SystemMemoryResource();
        PoolMemoryResource pool = new PoolMemoryResource(system, 1 << 20)) {
      long ptr = pool.allocate(1000);
      assertNotEquals(0, ptr);
      assertEquals(1 << 20, pool.poolSize());
      pool.deallocate(ptr, 1000);
    }
  }
}
