// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.cmr.CmrIllegalArgumentException;
import org.cmr.CmrIllegalStateException;
import org.cmr.MemoryResource;
import org.cmr.Status;
import org.cmr.StreamPool;
import org.junit.Test;

/** StreamPool: RMM's cuda_stream_pool, round robin, closed once. */
public class StreamPoolTest {
  @Test
  public void defaultSizeIs16() {
    try (StreamPool pool = new StreamPool()) {
      assertEquals(16, pool.size());
    }
  }

  @Test
  public void roundRobinAndModulo() {
    try (StreamPool pool = new StreamPool(3, StreamPool.NON_BLOCKING)) {
      long[] at = {pool.getStream(0), pool.getStream(1), pool.getStream(2)};
      assertNotEquals(at[0], at[1]);
      assertNotEquals(at[1], at[2]);
      for (int turn = 0; turn < 7; turn++) {
        assertEquals(at[turn % 3], pool.getStream());
      }
      assertEquals(at[1], pool.getStream(10));
      assertThrows(IllegalArgumentException.class, () -> pool.getStream(-1));
    }
  }

  @Test
  public void streamsOrderAllocations() {
    try (StreamPool pool = new StreamPool(2, StreamPool.SYNC_DEFAULT);
        MemoryResource mr = MemoryResource.parse("pool(system, initial_pool_size=1MiB)")) {
      long stream = pool.getStream();
      long ptr = mr.allocate(4096, stream);
      assertTrue(ptr != 0);
      mr.deallocate(ptr, 4096, pool.getStream());
    }
  }

  @Test
  public void badFlagsAndClosedPools() {
    CmrIllegalArgumentException bad = assertThrows(CmrIllegalArgumentException.class, () -> new StreamPool(4, 2));
    assertEquals(Status.ERROR_INVALID_ARGUMENT, bad.status());
    assertTrue(bad.getMessage().contains("flags 2"));
    StreamPool pool = new StreamPool(2, StreamPool.SYNC_DEFAULT);
    pool.close();
    pool.close(); /* closing twice is harmless */
    CmrIllegalStateException closed = assertThrows(CmrIllegalStateException.class, pool::getStream);
    assertEquals(Status.ERROR_DESTROYED_HANDLE, closed.status());
  }
}
