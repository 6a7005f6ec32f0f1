// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * cmr's diagnostic log, shared by C and every language (as RMM's debug log): lines
 * {@code [YYYY-MM-DD HH:MM:SS.mmm] [level] [thread id] message} about pool growth, upstream
 * failures, failure-callback retries, per-device changes, stream pools and resources made and
 * destroyed, written to stderr or appended to a file. The environment variables
 * {@code CMR_DEBUG_LOG_LEVEL} and {@code CMR_DEBUG_LOG_FILE} set both at first use.
 */
public final class Log {
  private Log() {}

  /** Writes messages at or above {@code level} (default {@link LogLevel#INFO}). */
  public static void setLevel(LogLevel level) {
    CmrNative.cmr_log_set_level(level);
  }

  public static LogLevel getLevel() {
    return LogLevel.swigToEnum(CmrNative.cmr_log_get_level());
  }

  /** Messages at or above {@code level} reach the sink at once (default {@link LogLevel#WARN}). */
  public static void setFlushLevel(LogLevel level) {
    CmrNative.cmr_log_set_flush_level(level);
  }

  public static LogLevel getFlushLevel() {
    return LogLevel.swigToEnum(CmrNative.cmr_log_get_flush_level());
  }

  /** Whether a message at {@code level} would be written now. */
  public static boolean shouldLog(LogLevel level) {
    return CmrNative.cmr_log_should_log(level);
  }

  /** Writes out what the sink has buffered. */
  public static void flush() {
    CmrNative.cmr_log_flush();
  }

  /** Appends the log to {@code path}; null or "" is stderr. */
  public static void setFile(String path) {
    CmrNative.cmr_log_set_file(path);
  }

  /** The file the log goes to, "" for stderr. */
  public static String getFile() {
    return CmrNative.cmr_log_get_file();
  }
}
