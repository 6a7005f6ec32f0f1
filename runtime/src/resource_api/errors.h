/* SPDX-License-Identifier: Apache-2.0 */
/* Error reporting (error.c, availability.c): this thread's last status and
 * message, as every failing function records them. */
#ifndef CMR_ERRORS_H
#define CMR_ERRORS_H

#include <string.h> /* strlen, for CMR_QUOTE */

#include <cmr/cmr.h>

#if defined(__GNUC__)
#define CMR_PRINTF(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#define CMR_PRINTF(fmt_index, args_index)
#endif

/* A value quoted in a message (a path, a value from a stack expression)
 * shows at most CMR_QUOTE_MAX characters, then "...": however long the value,
 * the reason written after it fits in the message. The three arguments of a
 * "%.*s%s" conversion, for `length` characters at `text`. */
#define CMR_QUOTE_MAX 128
#define CMR_QUOTE_N(text, length)                                                     \
  (int)((length) > CMR_QUOTE_MAX ? (size_t)CMR_QUOTE_MAX : (size_t)(length)), (text), \
      ((length) > CMR_QUOTE_MAX ? "..." : "")
#define CMR_QUOTE(text) CMR_QUOTE_N((text), strlen(text))

/* Record `status` with a formatted message as this thread's last error and
 * return `status`, so a failure is one line: return cmr_error(...). */
cmr_status cmr_error(cmr_status status, const char *format, ...) CMR_PRINTF(2, 3);

/* Prefix this thread's last message with "<context>: " (used when a callee's
 * message needs the caller's name and argument in front) and return status. */
cmr_status cmr_error_context(cmr_status status, const char *format, ...) CMR_PRINTF(2, 3);

/* For the few thread-locals read on every allocate and free: the
 * initial-exec model makes an access one instruction, where -fPIC's default
 * (general dynamic) calls __tls_get_addr (about 11 instructions). It takes
 * static TLS, of which a library loaded by dlopen (under a Python, Java, Go
 * or C# binding) gets only glibc's small reserve (512 bytes by default,
 * shared by every such library): keep these few and small, a few dozen
 * bytes in all. */
#define CMR_HOT_THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))

/* How many messages this thread has recorded so far (cmr_error and
 * cmr_error_context count them; hidden, like every runtime symbol). */
extern CMR_HOT_THREAD_LOCAL unsigned long cmr_error_serial_count;

/* The count of messages so far. Comparing two readings tells whether a
 * callee (e.g. a foreign resource) recorded one. Inline: dispatch reads it
 * around every call through a ref, and a function call costs more than the
 * read itself. */
static inline unsigned long cmr_error_serial(void) { return cmr_error_serial_count; }

enum { CMR_MESSAGE_CAPACITY = 1024 };

/* This thread's message and its count, kept across calls that record their
 * own (giving memory back on a failure path, a dump, a retry), so that the
 * message that says why the first failure happened is not lost. */
typedef struct cmr_kept_message {
  char text[CMR_MESSAGE_CAPACITY];
  unsigned long serial;
} cmr_kept_message;

void cmr_keep_message(cmr_kept_message *kept);
/* Makes the kept message and count this thread's again, as if nothing had
 * been recorded since cmr_keep_message. */
void cmr_restore_message(const cmr_kept_message *kept);

/* CMR_ERROR_UNSUPPORTED for a resource this build does not have, saying
 * which build it needs. */
cmr_status cmr_unavailable(const char *function, const char *resource);

#endif /* CMR_ERRORS_H */
