// SPDX-License-Identifier: Apache-2.0
namespace Cmr
{
    /// <summary>
    /// cmr's diagnostic log, shared by C and every language (as RMM's debug
    /// log): lines "[YYYY-MM-DD HH:MM:SS.mmm] [level] [thread id] message"
    /// about pool growth, upstream failures, failure-callback retries,
    /// per-device changes, stream pools and resources made and destroyed, on
    /// stderr or appended to a file. CMR_DEBUG_LOG_LEVEL and
    /// CMR_DEBUG_LOG_FILE set both at first use.
    /// </summary>
    public static class Log
    {
        /// <summary>Messages at or above it are written (default Info).</summary>
        public static LogLevel Level
        {
            get { return (LogLevel)Results.Of<int>(CmrNative.cmr_log_get_level); }
            set { CmrNative.cmr_log_set_level(value); }
        }

        /// <summary>Messages at or above it reach the sink at once (default Warn).</summary>
        public static LogLevel FlushLevel
        {
            get { return (LogLevel)Results.Of<int>(CmrNative.cmr_log_get_flush_level); }
            set { CmrNative.cmr_log_set_flush_level(value); }
        }

        /// <summary>Whether a message at `level` would be written now.</summary>
        public static bool ShouldLog(LogLevel level)
        {
            return CmrNative.cmr_log_should_log(level);
        }

        /// <summary>Writes out what the sink has buffered.</summary>
        public static void Flush()
        {
            CmrNative.cmr_log_flush();
        }

        /// <summary>The file the log is appended to; null or "" is stderr (reads back "").</summary>
        public static string File
        {
            get { return Results.Of<string>(CmrNative.cmr_log_get_file); }
            set { CmrNative.cmr_log_set_file(value); }
        }
    }
}
