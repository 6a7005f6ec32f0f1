// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.cmr.Allocation;
import org.cmr.CmrIllegalArgumentException;
import org.cmr.CmrIllegalStateException;
import org.cmr.CmrStream;
import org.cmr.MemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.StatisticsResourceAdaptor;
import org.cmr.Status;
import org.junit.Rule;
import org.junit.Test;

/** Allocation: a block that knows its size, alignment and stream, and frees itself with them. */
public class AllocationTest {
  @Rule public final CountedSystem host = new CountedSystem();

  private final StatisticsResourceAdaptor counted = host.resource();

  @Test
  public void knowsItsSizeAndFreesWithIt() {
    try (Allocation block = counted.allocation(1000)) {
      assertEquals(1000, block.getSize());
      assertEquals(256, block.getAlignment());
      assertEquals(0, block.getStream());
      assertNotEquals(0, block.getAddress());
      assertEquals(0, block.getAddress() % 256);
      assertEquals(1000, counted.bytesCurrent());
      assertFalse(block.isClosed());
    }
    assertEquals(0, counted.bytesCurrent());
  }

  @Test
  public void freesWithItsAlignmentAndStream() {
    try (CmrStream stream = new CmrStream();
        PoolMemoryResource pool = new PoolMemoryResource(counted, 1 << 20);
        Allocation block = pool.allocation(3000, 4096, stream.handle())) {
      assertEquals(0, block.getAddress() % 4096);
      assertEquals(4096, block.getAlignment());
      assertEquals(stream.handle(), block.getStream());
    }
  }

  @Test
  public void outlivesItsResourceAndStream() {
    Allocation block;
    CmrStream stream = new CmrStream();
    try (PoolMemoryResource pool = new PoolMemoryResource(counted, 1 << 20)) {
      block = pool.allocation(500, stream.handle());
    }
    stream.close();
    try (MemoryResource resource = block.getResource()) {
      assertEquals("pool", resource.typeName());
    }
    assertEquals(1 << 20, counted.bytesCurrent()); // the pool lives while the block does
    block.close();
    assertEquals(0, counted.bytesCurrent());
  }

  @Test
  public void useAfterCloseIsIllegalStateNamingTheBlock() {
    Allocation block = counted.allocation(64);
    block.close();
    block.close(); // a second close does nothing
    assertTrue(block.isClosed());
    CmrIllegalStateException e = assertThrows(CmrIllegalStateException.class, block::getAddress);
    assertEquals(Status.ERROR_DESTROYED_HANDLE, e.status());
    assertTrue(e.getMessage(), e.getMessage().contains("Allocation of 64 bytes is closed"));
    assertThrows(IllegalStateException.class, block::getSize);
  }

  @Test
  public void badArgumentsAreIllegalArguments() {
    assertThrows(IllegalArgumentException.class, () -> counted.allocation(-1));
    assertThrows(IllegalArgumentException.class, () -> counted.allocation(64, -256, 0));
    CmrIllegalArgumentException bad = assertThrows(CmrIllegalArgumentException.class, () -> counted.allocation(64, 3, 0));
    assertEquals(Status.ERROR_BAD_ALIGNMENT, bad.status());
    assertEquals(0, counted.bytesCurrent());
  }

  @Test
  public void zeroBytesIsABlockToo() {
    try (Allocation block = counted.allocation(0)) {
      assertEquals(0, block.getSize());
      assertEquals(0, block.getAddress());
    }
  }
}
