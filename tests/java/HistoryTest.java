// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.cmr.CmrIOException;
import org.cmr.CmrIllegalArgumentException;
import org.cmr.History;
import org.cmr.PoolMemoryResource;
import org.cmr.Status;
import org.cmr.SystemMemoryResource;
import org.junit.After;
import org.junit.Test;

/** History: the allocation history and snapshots from Java. */
public class HistoryTest {
  @After
  public void stopped() {
    History.stop();
  }

  @Test
  public void startStopAndWriteSnapshots() throws Exception {
    CmrIllegalArgumentException bad =
        assertThrows(CmrIllegalArgumentException.class, () -> History.start(1L << 27, false, 0));
    assertEquals(Status.ERROR_INVALID_ARGUMENT, bad.status());
    try (SystemMemoryResource system = new SystemMemoryResource();
        PoolMemoryResource pool = new PoolMemoryResource(system, 1 << 20)) {
      History.start(0, true, 8);
      assertTrue(History.isRecording());
      long ptr = pool.allocate(1000);
      File file = File.createTempFile("cmr_java_snapshot", ".json");
      file.deleteOnExit();
      History.writeSnapshot(pool, History.SnapshotFormat.JSON, file.getPath());
      String text = new String(Files.readAllBytes(file.toPath()), StandardCharsets.UTF_8);
      assertTrue(text, text.startsWith("{\"segments\":[{"));
      assertTrue(text, text.contains("\"total_size\":1048576,"));
      assertTrue(text, text.contains("{\"action\":\"alloc\",\"addr\":" + ptr + ",\"size\":1000,"));
      History.writeSnapshot(pool, History.SnapshotFormat.HTML, file.getPath());
      String page = new String(Files.readAllBytes(file.toPath()), StandardCharsets.UTF_8);
      assertTrue(page.startsWith("<!DOCTYPE html>"));
      assertThrows(CmrIOException.class,
          () -> History.writeSnapshot(pool, History.SnapshotFormat.JSON, "/nonexistent-cmr-dir/x"));
      assertThrows(NullPointerException.class, () -> History.writeSnapshot(null, History.SnapshotFormat.JSON, "x"));
      pool.deallocate(ptr, 1000);
      History.stop();
      assertFalse(History.isRecording());
    }
  }
}
