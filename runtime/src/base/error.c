/* SPDX-License-Identifier: Apache-2.0 */
/* Thread-local error messages and the names of the status codes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char cmr_message[CMR_MESSAGE_CAPACITY];
CMR_HOT_THREAD_LOCAL cmr_thread_words cmr_thread_words_of_thread;

cmr_status cmr_error(cmr_status status, const char *format, ...) {
  /* Formatted aside: this thread's message may be one of the arguments. */
  char message[CMR_MESSAGE_CAPACITY];
  va_list args;
  va_start(args, format);
  if (vsnprintf(message, sizeof message, format, args) < 0) message[0] = '\0';
  va_end(args);
  memcpy(cmr_message, message, sizeof cmr_message);
  cmr_thread_words_of_thread.error_serial++;
  /* The log's writer records no error, so this does not recurse. */
  cmr_log(CMR_LOG_DEBUG, "%s: %s", cmr_status_string(status), cmr_message);
  return status;
}

cmr_status cmr_error_context(cmr_status status, const char *format, ...) {
  char context[CMR_MESSAGE_CAPACITY];
  va_list args;
  va_start(args, format);
  vsnprintf(context, sizeof context, format, args);
  va_end(args);

  /* Build the whole message aside: the current one is an input. */
  char combined[CMR_MESSAGE_CAPACITY];
  /* Too long a message is cut at the capacity: the start says the most. */
  int written = cmr_message[0] != '\0' ? snprintf(combined, sizeof combined, "%s: %s", context, cmr_message)
                                       : snprintf(combined, sizeof combined, "%s", context);
  if (written < 0) combined[0] = '\0';
  memcpy(cmr_message, combined, sizeof cmr_message);
  cmr_thread_words_of_thread.error_serial++;
  return status;
}

const char *cmr_last_error_message(void) { return cmr_message; }

void cmr_keep_message(cmr_kept_message *kept) {
  memcpy(kept->text, cmr_message, sizeof kept->text);
  kept->serial = cmr_thread_words_of_thread.error_serial;
}

void cmr_restore_message(const cmr_kept_message *kept) {
  memcpy(cmr_message, kept->text, sizeof cmr_message);
  cmr_thread_words_of_thread.error_serial = kept->serial;
}

void cmr_clear_last_error(void) { cmr_message[0] = '\0'; }

const char *cmr_status_string(cmr_status status) {
  switch (status) {
  case CMR_SUCCESS: return "CMR_SUCCESS";
  case CMR_ERROR_INVALID_ARGUMENT: return "CMR_ERROR_INVALID_ARGUMENT";
  case CMR_ERROR_NULL_POINTER: return "CMR_ERROR_NULL_POINTER";
  case CMR_ERROR_INVALID_REF: return "CMR_ERROR_INVALID_REF";
  case CMR_ERROR_DESTROYED_HANDLE: return "CMR_ERROR_DESTROYED_HANDLE";
  case CMR_ERROR_BAD_ALIGNMENT: return "CMR_ERROR_BAD_ALIGNMENT";
  case CMR_ERROR_UNSUPPORTED_ALIGNMENT: return "CMR_ERROR_UNSUPPORTED_ALIGNMENT";
  case CMR_ERROR_SIZE_OVERFLOW: return "CMR_ERROR_SIZE_OVERFLOW";
  case CMR_ERROR_OUT_OF_MEMORY: return "CMR_ERROR_OUT_OF_MEMORY";
  case CMR_ERROR_UNKNOWN_DEVICE: return "CMR_ERROR_UNKNOWN_DEVICE";
  case CMR_ERROR_NO_DEVICE: return "CMR_ERROR_NO_DEVICE";
  case CMR_ERROR_CUDA: return "CMR_ERROR_CUDA";
  case CMR_ERROR_UNSUPPORTED: return "CMR_ERROR_UNSUPPORTED";
  case CMR_ERROR_PROPERTY_MISSING: return "CMR_ERROR_PROPERTY_MISSING";
  case CMR_ERROR_UNKNOWN_POINTER: return "CMR_ERROR_UNKNOWN_POINTER";
  case CMR_ERROR_INTERNAL: return "CMR_ERROR_INTERNAL";
  case CMR_ERROR_IO: return "CMR_ERROR_IO";
  case CMR_ERROR_REENTRANT_CALL: return "CMR_ERROR_REENTRANT_CALL";
  case CMR_ERROR_FORKED: return "CMR_ERROR_FORKED";
  case CMR_ERROR_STREAM_CAPTURE: return "CMR_ERROR_STREAM_CAPTURE";
  case CMR_ERROR_IPC_SAME_PROCESS: return "CMR_ERROR_IPC_SAME_PROCESS";
  case CMR_ERROR_IPC_GONE: return "CMR_ERROR_IPC_GONE";
  }
  return "CMR_UNKNOWN_STATUS";
}
