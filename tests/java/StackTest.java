// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import org.cmr.MemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.ResourceStack;
import org.cmr.StatisticsResourceAdaptor;
import org.cmr.SystemMemoryResource;
import org.junit.Test;

/** Stack expressions: the resources they build, as objects of their classes. */
public class StackTest {
  @Test
  public void aStackOfAdaptors() {
    try (ResourceStack stack = new ResourceStack("statistics(pool(system, initial_pool_size=1MiB))");
        MemoryResource top = stack.top();
        MemoryResource leaf = stack.leaf()) {
      assertTrue(top instanceof StatisticsResourceAdaptor);
      assertTrue(leaf instanceof SystemMemoryResource);
      StatisticsResourceAdaptor statistics = (StatisticsResourceAdaptor) top;
      long ptr = statistics.allocate(1000);
      assertEquals(1000, statistics.bytesCurrent());
      statistics.deallocate(ptr, 1000);
      assertEquals(0, statistics.bytesCurrent());
      assertEquals(
          "statistics(pool(system, initial_pool_size=1MiB, maximum_pool_size=unlimited, maximum_growth=unlimited, capture=serve))", stack.expression());
    }
  }

  @Test
  public void parseGivesTheTop() {
    try (MemoryResource pool = MemoryResource.parse("pool(system, initial_pool_size=64MiB)")) {
      assertTrue(pool instanceof PoolMemoryResource);
      assertEquals(64 << 20, ((PoolMemoryResource) pool).poolSize());
      assertEquals("pool", pool.typeName());
    }
  }
}
