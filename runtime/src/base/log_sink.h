/* SPDX-License-Identifier: Apache-2.0 */
/* What the log's public settings (log_settings.c) ask of its writer
 * (log_sink.c), which records no error itself. Private to base/. */
#ifndef CMR_LOG_SINK_H
#define CMR_LOG_SINK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "log_write.h"

/* Lines at or above it are flushed as they are written. */
extern _Atomic int cmr_log_flush_threshold;

static inline bool cmr_log_level_valid(cmr_log_level level) { return (unsigned)level <= CMR_LOG_OFF; }

/* Makes `file` (NULL: stderr) the sink under the name `path`; false when
 * the path cannot be kept (the sink is unchanged and `file` closed). */
bool cmr_log_sink_use(FILE *file, const char *path);

/* Flushes the sink: 0, or the errno of the flush or of a line that could
 * not be written since the last flush (then forgotten); *path is the
 * sink's name ("" for stderr). */
int cmr_log_sink_flush(const char **path);

/* The sink's name, "" for stderr: kept for the life of the process. */
const char *cmr_log_sink_path(void);

#endif /* CMR_LOG_SINK_H */
