// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/** What a {@link FailureCallbackResourceAdaptor} calls when its upstream is out of memory. */
@FunctionalInterface
public interface FailureCallback {
  /** Whether to try the allocation of {@code bytes} again (after freeing something, say). */
  boolean retry(long bytes);
}
