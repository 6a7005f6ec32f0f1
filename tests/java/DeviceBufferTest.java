// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.cmr.CmrIllegalArgumentException;
import org.cmr.CmrIllegalStateException;
import org.cmr.CmrStream;
import org.cmr.DeviceBuffer;
import org.cmr.MemoryResource;
import org.cmr.StatisticsResourceAdaptor;
import org.cmr.Status;
import org.junit.Rule;
import org.junit.Test;

/** DeviceBuffer over host memory: contents, sizes, streams and its resource. */
public class DeviceBufferTest {
  @Rule public final CountedSystem host = new CountedSystem();

  private final StatisticsResourceAdaptor counted = host.resource();

  @Test
  public void copiesInAndOut() {
    byte[] data = {1, 2, 3, 4, 5, 6, 7, 8};
    try (DeviceBuffer buffer = new DeviceBuffer(data, counted)) {
      assertEquals(8, buffer.getSize());
      assertNotEquals(0, buffer.getAddress());
      assertArrayEquals(data, buffer.toByteArray());
      buffer.copyFrom(new byte[] {9, 9});
      byte[] head = new byte[3];
      buffer.copyToHost(head);
      assertArrayEquals(new byte[] {9, 9, 3}, head);
    }
  }

  @Test
  public void sizesAndCapacity() {
    try (DeviceBuffer buffer = new DeviceBuffer(1000, counted)) {
      assertEquals(1000, buffer.getCapacity());
      buffer.reserve(4000);
      assertEquals(4000, buffer.getCapacity());
      assertEquals(1000, buffer.getSize());
      buffer.resize(2000);
      assertEquals(4000, buffer.getCapacity());
      buffer.shrinkToFit();
      assertEquals(2000, buffer.getCapacity());
      assertEquals(2000, counted.bytesCurrent());
    }
    try (DeviceBuffer empty = new DeviceBuffer(0, counted)) {
      assertEquals(0, empty.getAddress());
      assertEquals(0, empty.toByteArray().length);
    }
  }

  @Test
  public void anExplicitAlignmentIsKept() {
    try (DeviceBuffer buffer = new DeviceBuffer(100, 4096, 0, counted)) {
      assertEquals(4096, buffer.getAlignment());
      assertEquals(0, buffer.getAddress() % 4096);
      buffer.reserve(10000);
      assertEquals(0, buffer.getAddress() % 4096);
      buffer.shrinkToFit();
      assertEquals(0, buffer.getAddress() % 4096);
    }
    try (DeviceBuffer copied = new DeviceBuffer(new byte[] {1, 2, 3}, 1024, 0, counted)) {
      assertEquals(1024, copied.getAlignment());
      assertEquals(0, copied.getAddress() % 1024);
      assertArrayEquals(new byte[] {1, 2, 3}, copied.toByteArray());
    }
    try (DeviceBuffer plain = new DeviceBuffer(10, counted)) {
      assertEquals(256, plain.getAlignment());
    }
    CmrIllegalArgumentException bad = assertThrows(CmrIllegalArgumentException.class, () -> new DeviceBuffer(10, 3000, 0, counted));
    assertEquals(Status.ERROR_BAD_ALIGNMENT, bad.status());
    assertThrows(IllegalArgumentException.class, () -> new DeviceBuffer(10, -256, 0, counted));
    assertEquals(0, counted.bytesCurrent());
  }

  @Test
  public void streamsAndResource() {
    try (CmrStream stream = new CmrStream();
        DeviceBuffer buffer = new DeviceBuffer(100, stream.handle(), counted);
        MemoryResource resource = buffer.getResource()) {
      assertEquals(stream.handle(), buffer.getStream());
      buffer.setStream(0);
      assertEquals(0, buffer.getStream());
      stream.synchronize();
      assertTrue(resource.isEqual(counted));
    }
  }

  @Test
  public void badInputs() {
    try (DeviceBuffer buffer = new DeviceBuffer(4, counted)) {
      CmrIllegalArgumentException tooMuch = assertThrows(CmrIllegalArgumentException.class, () -> buffer.copyToHost(new byte[8]));
      assertEquals(Status.ERROR_INVALID_ARGUMENT, tooMuch.status());
      assertThrows(CmrIllegalArgumentException.class, () -> buffer.copyFrom(new byte[8]));
      assertThrows(NullPointerException.class, () -> buffer.copyFrom(null));
      assertThrows(IllegalArgumentException.class, () -> buffer.resize(-1));
    }
    assertThrows(NullPointerException.class, () -> new DeviceBuffer(4, null));
    DeviceBuffer closed = new DeviceBuffer(4, counted);
    closed.close();
    assertEquals(Status.ERROR_DESTROYED_HANDLE, assertThrows(CmrIllegalStateException.class, closed::getSize).status());
  }
}
