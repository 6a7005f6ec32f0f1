// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.cmr.Cmr;
import org.cmr.CmrIllegalStateException;
import org.cmr.CmrStream;
import org.cmr.DeviceBuffer;
import org.cmr.MemoryResource;
import org.cmr.PoolMemoryResource;
import org.cmr.StatisticsResourceAdaptor;
import org.cmr.Status;
import org.cmr.TrackingResourceAdaptor;
import org.junit.After;
import org.junit.Rule;
import org.junit.Test;

/**
 * A small graph (a pool over counted host memory, a tracking adaptor over it, a statistics
 * adaptor on top, a stream, a buffer on that stream from the top, the per-device entry set to the
 * top and the object the table hands back for it) released in every order (5040) by close(),
 * twice each, and by the Cleaner: everything still open keeps working, every closed object
 * throws, and at the end every byte and the stream are back.
 */
public class ReleaseOrdersTest {
  private static final long MIB = 1 << 20;
  private static final int OBJECTS = 7;

  @Rule public final CountedSystem base = new CountedSystem();

  @After
  public void resetTable() {
    Cmr.resetCurrentDeviceResource();
  }

  /** The graph; index 5 is the per-device entry, released by a reset. */
  private static final class Graph {
    final AutoCloseable[] objects = new AutoCloseable[OBJECTS];
    final boolean[] open = new boolean[OBJECTS];

    Graph(MemoryResource under) {
      PoolMemoryResource pool = new PoolMemoryResource(under, MIB);
      TrackingResourceAdaptor tracking = new TrackingResourceAdaptor(pool);
      StatisticsResourceAdaptor top = new StatisticsResourceAdaptor(tracking);
      CmrStream stream = new CmrStream();
      DeviceBuffer buffer = new DeviceBuffer(new byte[] {7, 7, 7}, stream.handle(), top);
      Cmr.setCurrentDeviceResource(top);
      MemoryResource current = Cmr.getCurrentDeviceResource();
      AutoCloseable entry = Cmr::resetCurrentDeviceResource;
      AutoCloseable[] all = {pool, tracking, top, stream, buffer, entry, current};
      System.arraycopy(all, 0, objects, 0, OBJECTS);
      Arrays.fill(open, true);
    }

    void release(int index) throws Exception {
      objects[index].close();
      objects[index].close(); // harmless
      open[index] = false;
    }

    /** Everything open works; everything closed throws. */
    void use() {
      for (int index : new int[] {0, 1, 2, 6}) {
        MemoryResource resource = (MemoryResource) objects[index];
        if (open[index]) {
          resource.deallocate(resource.allocate(300), 300);
        } else {
          expectClosed(() -> resource.allocate(300));
        }
      }
      CmrStream stream = (CmrStream) objects[3];
      if (open[3]) {
        stream.synchronize();
      } else {
        expectClosed(stream::handle);
      }
      DeviceBuffer buffer = (DeviceBuffer) objects[4];
      if (open[4]) {
        buffer.resize(5000);
        assertArrayEquals(new byte[] {7, 7, 7}, Arrays.copyOf(buffer.toByteArray(), 3));
        buffer.resize(3);
      } else {
        expectClosed(buffer::getSize);
      }
    }
  }

  private static void expectClosed(org.junit.function.ThrowingRunnable call) {
    CmrIllegalStateException thrown = assertThrows(CmrIllegalStateException.class, call);
    assertEquals(Status.ERROR_DESTROYED_HANDLE, thrown.status());
  }

  private static List<int[]> orders() {
    return LifetimeTest.permutations(OBJECTS);
  }

  @Test
  public void closingInEveryOrder() throws Exception {
    int streams = CmrStream.liveCount();
    List<int[]> orders = orders();
    assertEquals(5040, orders.size());
    for (int[] order : orders) {
      Graph graph = new Graph(base.resource());
      graph.use();
      for (int index : order) {
        graph.release(index);
        graph.use();
      }
      assertEquals("bytes left by order " + Arrays.toString(order), 0, base.resource().bytesCurrent());
      assertEquals("streams left by order " + Arrays.toString(order), streams, CmrStream.liveCount());
    }
  }

  /** Graphs with a prefix of an order closed and the rest dropped, for the Cleaner. */
  private void closeSomeDropTheRest(List<int[]> orders) throws Exception {
    for (int i = 0; i < orders.size(); i += 97) {
      Graph graph = new Graph(base.resource());
      int[] order = orders.get(i);
      for (int k = 0; k < i % OBJECTS; k++) {
        graph.release(order[k]);
      }
      Cmr.resetCurrentDeviceResource(); // the table's share is not the Cleaner's to drop
    }
  }

  @Test
  public void theCleanerReleasesWhatWasNotClosed() throws Exception {
    int streams = CmrStream.liveCount();
    closeSomeDropTheRest(orders());
    for (int attempt = 0; attempt < 500 && (base.resource().bytesCurrent() != 0 || CmrStream.liveCount() != streams);
        attempt++) {
      System.gc();
      Thread.sleep(10);
    }
    assertEquals("bytes the Cleaner did not give back", 0, base.resource().bytesCurrent());
    assertEquals("streams the Cleaner did not destroy", streams, CmrStream.liveCount());
  }

  @Test
  public void aBufferKeepsItsStream() {
    int streams = CmrStream.liveCount();
    CmrStream stream = new CmrStream();
    DeviceBuffer buffer = new DeviceBuffer(new byte[] {1, 2}, stream.handle(), base.resource());
    stream.close();
    assertTrue(stream.isClosed());
    assertEquals("the stream went while a buffer is ordered on it", streams + 1, CmrStream.liveCount());
    assertArrayEquals(new byte[] {1, 2}, buffer.toByteArray());
    buffer.setStream(Cmr.DEFAULT_STREAM);
    assertEquals("the stream outlived the last buffer ordered on it", streams, CmrStream.liveCount());
    buffer.close();
  }
}
