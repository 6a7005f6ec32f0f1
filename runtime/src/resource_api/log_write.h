/* SPDX-License-Identifier: Apache-2.0 */
/* Writing to the diagnostic log (cmr/log.h) from inside cmr:
 *
 *   cmr_log(CMR_LOG_DEBUG, "pool: grew by %zu bytes", bytes);
 *
 * costs one relaxed atomic load and a compare when the level is off, so it
 * may sit on any path; the arguments are evaluated only when it is on. The
 * writer never records an error (cmr_error logs, so it must not recurse). */
#ifndef CMR_LOG_WRITE_H
#define CMR_LOG_WRITE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <cmr/log.h>

#if defined(__GNUC__)
#define CMR_LOG_PRINTF(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#define CMR_LOG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define CMR_LOG_PRINTF(fmt_index, args_index)
#define CMR_LOG_UNLIKELY(x) (x)
#endif

/* The threshold now, or CMR_LOG_UNREAD before the environment is read. */
enum { CMR_LOG_UNREAD = -1 };
extern _Atomic int cmr_log_threshold;

/* Reads the environment once (later calls wait for the first) and returns
 * the threshold. */
int cmr_log_start(void);

static inline bool cmr_log_enabled(cmr_log_level level) {
  int threshold = atomic_load_explicit(&cmr_log_threshold, memory_order_relaxed);
  if (CMR_LOG_UNLIKELY(threshold == CMR_LOG_UNREAD)) threshold = cmr_log_start();
  return (int)level >= threshold && level < CMR_LOG_OFF;
}

/* localtime_r, for every caller in cmr: under a lock that a fork takes
 * (fork.h), since glibc's own lock of the time zone is not reset in a
 * forked child. */
void cmr_local_time(time_t seconds, struct tm *out);

/* Formats and writes one line at `level` (already known to be enabled). */
void cmr_log_write(cmr_log_level level, const char *format, ...) CMR_LOG_PRINTF(2, 3);

#define cmr_log(level, ...)                                        \
  do {                                                             \
    if (cmr_log_enabled(level)) cmr_log_write(level, __VA_ARGS__); \
  } while (0)

#endif /* CMR_LOG_WRITE_H */
