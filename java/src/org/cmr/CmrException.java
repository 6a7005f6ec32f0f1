// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * A cmr call failed: the status it returned and cmr's message saying what was wrong. Out of
 * memory is {@link CmrOutOfMemoryError} instead, and a file that cannot be written {@link
 * CmrIOException}.
 */
public class CmrException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Status status;

  /** A failure with {@code status}; {@code detail} says what was wrong. */
  public CmrException(Status status, String detail) {
    super(describe(status, detail));
    this.status = status;
  }

  /** Called by the JNI layer with the status a call returned and cmr's message. */
  CmrException(int status, String detail) {
    this(Status.swigToEnum(status), detail);
  }

  /** The status the call returned. */
  public Status status() {
    return status;
  }

  /** "CMR_&lt;status&gt;: detail", as cmr_status_string names the status. */
  static String describe(Status status, String detail) {
    return "CMR_" + status.name() + ": " + detail;
  }
}
