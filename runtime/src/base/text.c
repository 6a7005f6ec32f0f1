/* SPDX-License-Identifier: Apache-2.0 */
/* Growing text (text.h): the capacity doubles past what is needed, so that
 * adding a byte at a time costs amortized constant time. */
#include "text.h"

#include <stdlib.h>
#include <string.h>

void cmr_text_add(cmr_text *text, const void *bytes, size_t length) {
  if (text->failed) return;
  if (text->length + length + 1 > text->capacity) {
    size_t capacity = (text->length + length + 1) * 2;
    char *grown = realloc(text->data, capacity);
    if (grown == NULL) {
      text->failed = true;
      return;
    }
    text->data = grown;
    text->capacity = capacity;
  }
  memcpy(text->data + text->length, bytes, length);
  text->length += length;
  text->data[text->length] = '\0';
}

void cmr_text_put(cmr_text *text, const char *string) { cmr_text_add(text, string, strlen(string)); }
