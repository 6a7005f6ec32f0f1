/* SPDX-License-Identifier: Apache-2.0 */
/* cmr's diagnostic log, as RMM's debug log (spdlog in RMM): one line per
 * event, `[YYYY-MM-DD HH:MM:SS.mmm] [level] [thread id] message`, written to
 * stderr or appended to a file. It records what the runtime does that a
 * user may want to see when memory behaves unexpectedly: pool growth (bytes
 * asked of the upstream, the new pool size), upstream failures, retries of
 * a failure callback, per-device table changes, stream pools, resources
 * made and destroyed, and every error cmr reports (at debug level).
 *
 * Configuration, by API or by the environment, read once at first use:
 *   CMR_DEBUG_LOG_LEVEL  trace|debug|info|warn|error|critical|off, in any
 *                        case ("warning" too); a bad value is reported once
 *                        on stderr and ignored.
 *   CMR_DEBUG_LOG_FILE   a file to append to instead of stderr (as RMM's
 *                        RMM_DEBUG_LOG_FILE); one that cannot be opened is
 *                        reported on stderr, which is used instead.
 * Every function is thread-safe. Calls that fail return a status and set
 * cmr_last_error_message() as every cmr call does. */
#ifndef CMR_LOG_H
#define CMR_LOG_H

#include <cmr/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The levels, in RMM's (spdlog's) order and numbering. */
typedef enum cmr_log_level {
  CMR_LOG_TRACE = 0,
  CMR_LOG_DEBUG = 1,
  CMR_LOG_INFO = 2,
  CMR_LOG_WARN = 3,
  CMR_LOG_ERROR = 4,
  CMR_LOG_CRITICAL = 5,
  CMR_LOG_OFF = 6 /* as a threshold: nothing is written */
} cmr_log_level;

/* Messages at or above `level` are written; the default is CMR_LOG_INFO.
 * A level outside the enum is CMR_ERROR_INVALID_ARGUMENT. */
CMR_API cmr_status cmr_log_set_level(cmr_log_level level);
CMR_API cmr_status cmr_log_get_level(cmr_log_level *out);
/* Messages at or above `level` flush the sink as soon as they are written
 * (lower ones may stay buffered until then, or until cmr_log_flush); the
 * default is CMR_LOG_WARN. */
CMR_API cmr_status cmr_log_set_flush_level(cmr_log_level level);
CMR_API cmr_status cmr_log_get_flush_level(cmr_log_level *out);
/* Whether a message at `level` would be written now (false for a level
 * outside the enum, and for CMR_LOG_OFF). */
CMR_API bool cmr_log_should_log(cmr_log_level level);
/* Writes out whatever the sink has buffered. CMR_ERROR_IO, with the
 * system's reason, when that fails or a line written since the last flush
 * could not be (a full disk). */
CMR_API cmr_status cmr_log_flush(void);
/* Where the log goes: NULL or "" is stderr; any other path is opened for
 * appending (created if missing). A file that cannot be opened is
 * CMR_ERROR_INVALID_ARGUMENT with the reason, and the sink stays as it was.
 * The previous file is flushed and closed (a failure to write it is no
 * longer reported: cmr_log_flush speaks of the new sink). */
CMR_API cmr_status cmr_log_set_file(const char *path);
/* The path of the file the log goes to, "" for stderr. The text stays
 * valid for the life of the process. */
CMR_API cmr_status cmr_log_get_file(const char **out);

#ifdef __cplusplus
}
#endif

#endif /* CMR_LOG_H */
