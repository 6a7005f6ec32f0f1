// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * A resource could not serve an allocation (CMR_ERROR_OUT_OF_MEMORY). An {@link OutOfMemoryError},
 * as running out of memory is in Java, so that code which handles that handles this too.
 */
public class CmrOutOfMemoryError extends OutOfMemoryError implements CmrFailure {
  private static final long serialVersionUID = 1L;

  /** The failure cmr's message {@code detail} describes. */
  CmrOutOfMemoryError(String detail) {
    super(CmrException.describe(Status.ERROR_OUT_OF_MEMORY, detail));
  }
}
