/* SPDX-License-Identifier: Apache-2.0 */
/* Text grown by appending, in host memory the owner frees (free(data)). */
#ifndef CMR_TEXT_H
#define CMR_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialized, it is empty with no memory. After any addition, even of
 * nothing, data holds the `length` bytes added and a NUL past them; once
 * host memory has run out, `failed` is set and later additions do nothing
 * (data keeps what fitted). */
typedef struct cmr_text {
  char *data;
  size_t length;
  size_t capacity;
  bool failed;
} cmr_text;

void cmr_text_add(cmr_text *text, const void *bytes, size_t length);

/* Adds a NUL-terminated string, without its NUL. */
void cmr_text_put(cmr_text *text, const char *string);

#endif /* CMR_TEXT_H */
