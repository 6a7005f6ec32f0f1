// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import org.cmr.CmrIllegalArgumentException;
import org.cmr.StatisticsResourceAdaptor;
import org.cmr.Status;
import org.cmr.SystemMemoryResource;
import org.junit.Test;

/** The statistics adaptor's counters and their stack, read from Java. */
public class StatisticsTest {
  @Test
  public void countersAndLevels() {
    try (SystemMemoryResource system = new SystemMemoryResource();
        StatisticsResourceAdaptor statistics = new StatisticsResourceAdaptor(system)) {
      long a = statistics.allocate(1000);
      long b = statistics.allocate(3000);
      assertEquals(4000, statistics.bytesCurrent());
      assertEquals(2, statistics.allocationsCurrent());
      statistics.deallocate(a, 1000);
      assertEquals(3000, statistics.bytesCurrent());
      assertEquals(4000, statistics.bytesPeak());
      assertEquals(4000, statistics.bytesTotal());
      assertEquals(2, statistics.allocationsPeak());
      assertEquals(2, statistics.allocationsTotal());

      statistics.pushCounters();
      assertEquals(2, statistics.counterLevels());
      assertEquals(0, statistics.bytesTotal());
      long c = statistics.allocate(500);
      assertEquals("current counts every level", 3500, statistics.bytesCurrent());
      assertEquals(500, statistics.bytesPeak());
      statistics.deallocate(c, 500);
      statistics.popCounters();
      assertEquals(1, statistics.counterLevels());
      assertEquals(4500, statistics.bytesTotal());
      assertEquals(3, statistics.allocationsTotal());

      CmrIllegalArgumentException e = assertThrows(CmrIllegalArgumentException.class, statistics::popCounters);
      assertEquals(Status.ERROR_INVALID_ARGUMENT, e.status());
      statistics.deallocate(b, 3000);
      assertEquals(0, statistics.bytesCurrent());
      assertEquals(0, statistics.allocationsCurrent());
    }
  }
}
