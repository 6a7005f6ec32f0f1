// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/** Which Java exception reports which cmr status (the JNI layer throws what {@link #of} makes). */
final class Failures {
  private Failures() {}

  /** The exception reporting {@code status} (a failure) with cmr's message {@code detail}. */
  static Throwable of(int status, String detail) {
    Status named = Status.swigToEnum(status);
    switch (named) {
      case ERROR_OUT_OF_MEMORY:
        return new CmrOutOfMemoryError(detail);
      case ERROR_IO:
        return new CmrIOException(detail);
      case ERROR_INVALID_ARGUMENT:
      case ERROR_NULL_POINTER:
      case ERROR_INVALID_REF:
      case ERROR_BAD_ALIGNMENT:
      case ERROR_UNSUPPORTED_ALIGNMENT:
      case ERROR_SIZE_OVERFLOW:
      case ERROR_UNKNOWN_DEVICE:
      case ERROR_UNKNOWN_POINTER:
      case ERROR_PROPERTY_MISSING:
        return new CmrIllegalArgumentException(named, detail);
      case ERROR_DESTROYED_HANDLE:
      case ERROR_FORKED:
      case ERROR_REENTRANT_CALL:
        return new CmrIllegalStateException(named, detail);
      default:
        return new CmrException(named, detail);
    }
  }

  /** What a Java object says when used after {@link AutoCloseable#close()}: {@code what} names it. */
  static CmrIllegalStateException closed(String what) {
    return new CmrIllegalStateException(Status.ERROR_DESTROYED_HANDLE, what + " is closed");
  }
}
