// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * A file could not be written or flushed (CMR_ERROR_IO: a full disk, a closed pipe): the log of a
 * {@link LoggingResourceAdaptor}, an arena's dump, cmr's diagnostic log. An {@link
 * UncheckedIOException}, as I/O failures are in Java, whose cause is an {@link IOException} with
 * cmr's message.
 */
public class CmrIOException extends UncheckedIOException {
  private static final long serialVersionUID = 1L;

  /** Called by the JNI layer with the status (always CMR_ERROR_IO) and cmr's message. */
  CmrIOException(int status, String detail) {
    super(CmrException.describe(Status.swigToEnum(status), detail), new IOException(detail));
  }

  /** Always {@link Status#ERROR_IO}. */
  public Status status() {
    return Status.ERROR_IO;
  }
}
