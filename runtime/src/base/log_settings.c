/* SPDX-License-Identifier: Apache-2.0 */
/* The diagnostic log's public settings (cmr/log.h) over its writer
 * (log_sink.h): the levels, the file and the flush, each reporting a bad
 * argument or a failed write as an error. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "log_sink.h"

static cmr_status cmr_log_check_level(cmr_log_level level, const char *what) {
  if (cmr_log_level_valid(level)) return CMR_SUCCESS;
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                   "%s: level %d is not a cmr_log_level (CMR_LOG_TRACE %d to CMR_LOG_OFF %d)", what, (int)level,
                   CMR_LOG_TRACE, CMR_LOG_OFF);
}

cmr_status cmr_log_set_level(cmr_log_level level) {
  cmr_status status = cmr_log_check_level(level, "cmr_log_set_level");
  if (status != CMR_SUCCESS) return status;
  (void)cmr_log_start(); /* the environment must not override this later */
  atomic_store_explicit(&cmr_log_threshold, (int)level, memory_order_release);
  return CMR_SUCCESS;
}

cmr_status cmr_log_get_level(cmr_log_level *out) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "cmr_log_get_level: out is NULL");
  *out = (cmr_log_level)cmr_log_start();
  return CMR_SUCCESS;
}

cmr_status cmr_log_set_flush_level(cmr_log_level level) {
  cmr_status status = cmr_log_check_level(level, "cmr_log_set_flush_level");
  if (status != CMR_SUCCESS) return status;
  atomic_store_explicit(&cmr_log_flush_threshold, (int)level, memory_order_relaxed);
  return CMR_SUCCESS;
}

cmr_status cmr_log_get_flush_level(cmr_log_level *out) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "cmr_log_get_flush_level: out is NULL");
  *out = (cmr_log_level)atomic_load_explicit(&cmr_log_flush_threshold, memory_order_relaxed);
  return CMR_SUCCESS;
}

bool cmr_log_should_log(cmr_log_level level) { return cmr_log_level_valid(level) && cmr_log_enabled(level); }

cmr_status cmr_log_flush(void) {
  const char *path;
  int error = cmr_log_sink_flush(&path);
  if (error != 0) {
    const char *where = path[0] != '\0' ? path : "stderr";
    return cmr_error(CMR_ERROR_IO, "cmr_log_flush: writing the log to %.*s%s failed: %s", CMR_QUOTE(where),
                     strerror(error));
  }
  return CMR_SUCCESS;
}

cmr_status cmr_log_set_file(const char *path) {
  static const char what[] = "cmr_log_set_file";
  (void)cmr_log_start(); /* the environment's file must not replace this one later */
  FILE *file = NULL;
  if (path != NULL && path[0] != '\0') {
    file = fopen(path, "a");
    if (file == NULL) {
      int error = errno;
      return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: \"%.*s%s\" cannot be opened for appending (%s)", what,
                       CMR_QUOTE(path), strerror(error));
    }
  }
  if (!cmr_log_sink_use(file, path)) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory to keep the path \"%s\"", what, path);
  }
  cmr_log(CMR_LOG_DEBUG, "cmr_log_set_file: logging to %s", file == NULL ? "stderr" : path);
  return CMR_SUCCESS;
}

cmr_status cmr_log_get_file(const char **out) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "cmr_log_get_file: out is NULL");
  *out = cmr_log_sink_path();
  return CMR_SUCCESS;
}
