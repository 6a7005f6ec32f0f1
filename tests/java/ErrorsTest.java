// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.cmr.BinningMemoryResource;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.cmr.ArenaMemoryResource;
import org.cmr.CmrFailure;
import org.cmr.CmrIllegalArgumentException;
import org.cmr.CmrIllegalStateException;
import org.cmr.CmrIOException;
import org.cmr.CmrOutOfMemoryError;
import org.cmr.LimitingResourceAdaptor;
import org.cmr.LoggingResourceAdaptor;
import org.cmr.MemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.ResourceStack;
import org.cmr.SimulatedMemoryResource;
import org.cmr.Status;
import org.junit.Rule;
import org.junit.Test;

/** Each bad input is its own exception, with the status and cmr's message saying what was wrong. */
public class ErrorsTest {
  @Rule public final CountedSystem host = new CountedSystem();

  private final MemoryResource system = host.resource();

  private static void assertStatus(Status status, String inMessage, CmrFailure e) {
    assertEquals(status, e.status());
    assertTrue(e.getMessage() + " names " + inMessage, e.getMessage().contains(inMessage));
    assertTrue(e.getMessage(), e.getMessage().startsWith("CMR_" + status.name() + ": "));
  }

  @Test
  public void outOfMemoryFromALimitingAdaptor() {
    try (LimitingResourceAdaptor limited = new LimitingResourceAdaptor(system, 4096)) {
      long ptr = limited.allocate(4096);
      CmrOutOfMemoryError e = assertThrows(CmrOutOfMemoryError.class, () -> limited.allocate(1));
      assertEquals(Status.ERROR_OUT_OF_MEMORY, e.status());
      assertTrue(e.getMessage(), e.getMessage().startsWith("CMR_ERROR_OUT_OF_MEMORY: "));
      assertTrue("an OutOfMemoryError", e instanceof OutOfMemoryError);
      limited.deallocate(ptr, 4096);
      limited.deallocate(limited.allocate(4096), 4096);
    }
  }

  private static void assertIO(String inMessage, CmrIOException e) {
    assertEquals(Status.ERROR_IO, e.status());
    assertTrue(e.getMessage(), e.getMessage().startsWith("CMR_ERROR_IO: "));
    assertTrue(e.getMessage() + " names " + inMessage, e.getMessage().contains(inMessage));
    assertTrue("an UncheckedIOException", e instanceof UncheckedIOException);
    assertTrue("caused by an IOException", e.getCause() instanceof IOException);
  }

  @Test
  public void aFullDiskIsAnIOException() {
    try (LoggingResourceAdaptor log = new LoggingResourceAdaptor(system, "/dev/full")) {
      log.deallocate(log.allocate(256), 256); // a row lost does not fail the call
      assertIO("3 rows could not be written to /dev/full: No space left on device",
          assertThrows(CmrIOException.class, log::flush));
      assertEquals(3, log.lostRows());
    }
    try (ArenaMemoryResource arena = new ArenaMemoryResource(system, 1 << 20, true, "/dev/full")) {
      assertIO("writing the dump to /dev/full failed", assertThrows(CmrIOException.class, arena::dump));
    }
  }

  @Test
  public void outOfMemoryFromASimulatedDevice() {
    try (SimulatedMemoryResource device = new SimulatedMemoryResource(1 << 20)) {
      assertThrows(CmrOutOfMemoryError.class, () -> device.allocate(2 << 20));
    }
  }

  @Test
  public void aClosedResource() {
    PoolMemoryResource pool = new PoolMemoryResource(system, 1 << 20);
    pool.close();
    pool.close(); // a second close does nothing
    assertTrue(pool.isClosed());
    assertStatus(Status.ERROR_DESTROYED_HANDLE, "PoolMemoryResource is closed",
        assertThrows(CmrIllegalStateException.class, () -> pool.allocate(8)));
    assertStatus(Status.ERROR_DESTROYED_HANDLE, "closed", assertThrows(CmrIllegalStateException.class, pool::poolSize));
    assertStatus(Status.ERROR_DESTROYED_HANDLE, "closed",
        assertThrows(CmrIllegalStateException.class, () -> new PoolMemoryResource(pool, 0)));
    assertStatus(Status.ERROR_DESTROYED_HANDLE, "closed", assertThrows(CmrIllegalStateException.class, () -> system.isEqual(pool)));
  }

  @Test
  public void badAlignments() {
    assertStatus(Status.ERROR_BAD_ALIGNMENT, "3",
        assertThrows(CmrIllegalArgumentException.class, () -> system.allocateAligned(64, 3, 0)));
    assertStatus(Status.ERROR_BAD_ALIGNMENT, "0",
        assertThrows(CmrIllegalArgumentException.class, () -> system.allocateAligned(64, 0, 0)));
    try (BinningMemoryResource binning = new BinningMemoryResource(system)) {
      assertStatus(Status.ERROR_UNSUPPORTED_ALIGNMENT, "4096",
          assertThrows(CmrIllegalArgumentException.class, () -> binning.allocateAligned(64, 4096, 0)));
    }
    try (PoolMemoryResource pool = new PoolMemoryResource(system, 1 << 20)) {
      long ptr = pool.allocateAligned(64, 4096, 0);
      assertEquals(0, ptr % 4096);
      pool.deallocateAligned(ptr, 64, 4096, 0);
    }
  }

  @Test
  public void aForeignPointer() {
    try (PoolMemoryResource pool = new PoolMemoryResource(system, 1 << 20)) {
      long foreign = system.allocate(256);
      try {
        assertStatus(Status.ERROR_UNKNOWN_POINTER, "",
            assertThrows(CmrIllegalArgumentException.class, () -> pool.deallocate(foreign, 256)));
        long ptr = pool.allocate(256);
        assertStatus(Status.ERROR_INVALID_ARGUMENT, "",
            assertThrows(CmrIllegalArgumentException.class, () -> pool.deallocate(ptr, 512)));
        pool.deallocate(ptr, 256);
      } finally {
        system.deallocate(foreign, 256);
      }
    }
  }

  @Test
  public void badConstructorArguments() {
    assertStatus(Status.ERROR_INVALID_ARGUMENT, "initial_pool_size 1000 is not a multiple of 256",
        assertThrows(CmrIllegalArgumentException.class, () -> new PoolMemoryResource(system, 1000)));
    assertStatus(Status.ERROR_INVALID_ARGUMENT, "larger than maximum_pool_size",
        assertThrows(CmrIllegalArgumentException.class, () -> new PoolMemoryResource(system, 1 << 20, 1 << 16)));
    assertStatus(Status.ERROR_INVALID_ARGUMENT, "power of two",
        assertThrows(CmrIllegalArgumentException.class, () -> new LimitingResourceAdaptor(system, 4096, 3)));
  }

  @Test
  public void badJavaValues() {
    IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> system.allocate(-1));
    assertTrue(negative.getMessage(), negative.getMessage().contains("bytes is -1"));
    assertThrows(IllegalArgumentException.class, () -> new PoolMemoryResource(system, -256));
    NullPointerException noUpstream = assertThrows(NullPointerException.class, () -> new PoolMemoryResource(null));
    assertTrue(noUpstream.getMessage(), noUpstream.getMessage().contains("upstream is null"));
    assertThrows(NullPointerException.class, () -> system.isEqual(null));
  }

  @Test
  public void badStackExpressions() {
    assertStatus(Status.ERROR_INVALID_ARGUMENT, "column",
        assertThrows(CmrIllegalArgumentException.class, () -> new ResourceStack("pool(nonesuch)")));
    assertStatus(Status.ERROR_INVALID_ARGUMENT, "initial_pool_size",
        assertThrows(CmrIllegalArgumentException.class, () -> MemoryResource.parse("pool(system, initial_pool_size=1000)")));
    assertThrows(NullPointerException.class, () -> MemoryResource.parse(null));
  }
}
