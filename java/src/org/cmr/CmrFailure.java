// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * What every exception that reports a cmr status has: the status and cmr's message. Each such
 * exception extends the Java exception its kind of failure is in Java ({@link
 * IllegalArgumentException} for a bad argument, {@link IllegalStateException} for an object used
 * after close, {@link OutOfMemoryError}, {@link java.io.UncheckedIOException}, or {@link
 * CmrException} for the rest), so a catch of either catches it.
 */
public interface CmrFailure {
  /** The status the call returned: the one {@link #getMessage()} names. */
  default Status status() {
    String message = getMessage();
    return Status.valueOf(message.substring("CMR_".length(), message.indexOf(": ")));
  }

  /**
   * "CMR_&lt;status&gt;: detail": the status's name and cmr's message saying what was wrong,
   * whence {@link #status()}.
   */
  String getMessage();
}
