// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * A cmr call failed: the status it returned and cmr's message saying what was wrong, for the
 * statuses no Java exception names (a CUDA error, a call this build does not support, a bug in
 * cmr). A bad argument is {@link CmrIllegalArgumentException} instead, an object used after close
 * {@link CmrIllegalStateException}, out of memory {@link CmrOutOfMemoryError}, and a file that
 * cannot be written {@link CmrIOException}: {@link CmrFailure} is what they all are.
 */
public class CmrException extends RuntimeException implements CmrFailure {
  private static final long serialVersionUID = 1L;

  /** A failure with {@code status}; {@code detail} says what was wrong. */
  public CmrException(Status status, String detail) {
    super(describe(status, detail));
  }

  /** "CMR_&lt;status&gt;: detail", as cmr_status_string names the status. */
  static String describe(Status status, String detail) {
    return "CMR_" + status.name() + ": " + detail;
  }
}
