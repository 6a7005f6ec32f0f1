// SPDX-License-Identifier: Apache-2.0
package org.cmr.tests;

import static org.junit.Assert.assertEquals;

import org.cmr.StatisticsResourceAdaptor;
import org.cmr.SystemMemoryResource;
import org.junit.rules.ExternalResource;

/**
 * A JUnit rule: host memory behind a statistics adaptor for each test (JUnit makes a test object,
 * and so a rule, per test), which must have given back every byte it took when the test ends.
 */
final class CountedSystem extends ExternalResource {
  private final SystemMemoryResource system = new SystemMemoryResource();
  private final StatisticsResourceAdaptor counted = new StatisticsResourceAdaptor(system);

  @Override
  protected void after() {
    try {
      assertEquals("bytes still taken from the system resource", 0, counted.bytesCurrent());
    } finally {
      counted.close();
      system.close();
    }
  }

  /** The counted resource to make the test's resources over. */
  StatisticsResourceAdaptor resource() {
    return counted;
  }

  /** The system resource under it, uncounted. */
  SystemMemoryResource system() {
    return system;
  }
}
