// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.cmr.CmrIllegalArgumentException;
import org.cmr.Log;
import org.cmr.LogLevel;
import org.cmr.Status;
import org.cmr.StreamPool;
import org.junit.After;
import org.junit.Test;

/** Log: cmr's diagnostic log, configured from Java. */
public class LogTest {
  @After
  public void backToTheDefaults() {
    Log.setLevel(LogLevel.INFO);
    Log.setFlushLevel(LogLevel.WARN);
    Log.setFile(null);
  }

  @Test
  public void levels() {
    assertEquals(LogLevel.INFO, Log.getLevel());
    assertEquals(LogLevel.WARN, Log.getFlushLevel());
    Log.setLevel(LogLevel.ERROR);
    assertEquals(LogLevel.ERROR, Log.getLevel());
    assertTrue(Log.shouldLog(LogLevel.CRITICAL));
    assertFalse(Log.shouldLog(LogLevel.WARN));
    assertFalse(Log.shouldLog(LogLevel.OFF));
    Log.setFlushLevel(LogLevel.TRACE);
    assertEquals(LogLevel.TRACE, Log.getFlushLevel());
  }

  @Test
  public void fileSink() throws Exception {
    File file = File.createTempFile("cmr_java_log", ".txt");
    file.deleteOnExit();
    Log.setFile(file.getPath());
    assertEquals(file.getPath(), Log.getFile());
    Log.setLevel(LogLevel.DEBUG);
    new StreamPool(2, StreamPool.SYNC_DEFAULT).close();
    Log.flush();
    Log.setFile("");
    assertEquals("", Log.getFile());
    String text = new String(Files.readAllBytes(file.toPath()), StandardCharsets.UTF_8);
    assertTrue(text, text.matches("(?s)\\[\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d{3}\\] \\[debug\\] \\[\\d+\\] "
        + "cmr_stream_pool_create: stream pool .* of 2 streams.*"));
    CmrIllegalArgumentException bad = assertThrows(CmrIllegalArgumentException.class, () -> Log.setFile("/nonexistent-cmr-dir/x.log"));
    assertEquals(Status.ERROR_INVALID_ARGUMENT, bad.status());
  }
}
