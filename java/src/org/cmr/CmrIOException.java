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
public class CmrIOException extends UncheckedIOException implements CmrFailure {
  private static final long serialVersionUID = 1L;

  /** The failure cmr's message {@code detail} describes. */
  CmrIOException(String detail) {
    super(CmrException.describe(Status.ERROR_IO, detail), new IOException(detail));
  }
}
