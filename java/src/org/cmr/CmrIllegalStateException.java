// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * An object used when it cannot be: after it was closed ({@link Status#ERROR_DESTROYED_HANDLE},
 * the message naming the object), in a forked child ({@link Status#ERROR_FORKED}), or from inside
 * its own upstream's call ({@link Status#ERROR_REENTRANT_CALL}). An {@link IllegalStateException},
 * with the status and cmr's message.
 */
public class CmrIllegalStateException extends IllegalStateException implements CmrFailure {
  private static final long serialVersionUID = 1L;

  /** A refused use with {@code status}; {@code detail} says what was wrong. */
  public CmrIllegalStateException(Status status, String detail) {
    super(CmrException.describe(status, detail));
  }
}
