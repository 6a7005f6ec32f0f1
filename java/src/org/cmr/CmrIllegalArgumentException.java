// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * cmr refused an argument: a value outside what the call accepts ({@link
 * Status#ERROR_INVALID_ARGUMENT}), a bad or unsupported alignment, a size that overflows, an
 * unknown device, a pointer the resource did not hand out, an upstream without a property the
 * resource requires. An {@link IllegalArgumentException}, with the status and cmr's message.
 */
public class CmrIllegalArgumentException extends IllegalArgumentException implements CmrFailure {
  private static final long serialVersionUID = 1L;

  /** A refused argument with {@code status}; {@code detail} says what was wrong. */
  public CmrIllegalArgumentException(Status status, String detail) {
    super(CmrException.describe(status, detail));
  }
}
