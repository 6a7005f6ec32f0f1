// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * A resource could not serve an allocation (CMR_ERROR_OUT_OF_MEMORY). An {@link OutOfMemoryError},
 * as running out of memory is in Java, so that code which handles that handles this too.
 */
public class CmrOutOfMemoryError extends OutOfMemoryError {
  private static final long serialVersionUID = 1L;

  /** Called by the JNI layer with the status (always out of memory) and cmr's message. */
  CmrOutOfMemoryError(int status, String detail) {
    super(CmrException.describe(Status.swigToEnum(status), detail));
  }

  /** Always {@link Status#ERROR_OUT_OF_MEMORY}. */
  public Status status() {
    return Status.ERROR_OUT_OF_MEMORY;
  }
}
