// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import org.cmr.Cmr;
import org.cmr.CmrIllegalArgumentException;
import org.cmr.Status;
import org.junit.Test;

/** The size grammar through Java: the table the C suite reads (tests/sizes.txt, CMR_SIZES_TABLE). */
public class SizeGrammarTest {
  @Test
  public void parseSizeReadsTheTable() throws Exception {
    List<String> lines = Files.readAllLines(Paths.get(System.getenv("CMR_SIZES_TABLE")), StandardCharsets.UTF_8);
    int cases = 0;
    for (String line : lines) {
      if (line.isEmpty() || line.startsWith("#")) continue;
      int space = line.indexOf(' ');
      String expected = line.substring(0, space);
      String text = line.substring(space + 1).replace("\\t", "\t");
      cases++;
      if (expected.equals("invalid") || expected.equals("overflow")) {
        try {
          Cmr.parseSize(text);
          fail("\"" + text + "\" was read");
        } catch (CmrIllegalArgumentException e) {
          Status want = expected.equals("invalid") ? Status.ERROR_INVALID_ARGUMENT : Status.ERROR_SIZE_OVERFLOW;
          assertEquals("\"" + text + "\": " + e.getMessage(), want, e.status());
        }
      } else {
        assertEquals("\"" + text + "\"", Long.parseUnsignedLong(expected), Cmr.parseSize(text));
      }
    }
    assertTrue("the table has its cases", cases > 60);
  }
}
