/* SPDX-License-Identifier: Apache-2.0 */
/* One writer of nested values (dicts, lists, integers, strings, booleans)
 * into memory, as a pickle (protocol 2 or 4: the opcodes every Python
 * unpickler reads, no memo, no classes) or as JSON: the snapshot is written
 * once, through these calls, in either form. A failure (no host memory) is
 * kept and reported by cmr_encode_finish. */
#ifndef CMR_SNAPSHOT_ENCODE_H
#define CMR_SNAPSHOT_ENCODE_H

#include <stdbool.h>
#include <stdint.h>

#include <cmr/history.h>

#include "text.h"

enum { cmr_encode_max_depth = 16 };

typedef struct cmr_encoder {
  cmr_snapshot_format format; /* CMR_SNAPSHOT_PICKLE, _PICKLE_2 or _JSON */
  cmr_text out;               /* failed also when the values nest too deep */
  unsigned depth;
  /* JSON: whether the container at each depth has had an item; whether a key was just written. */
  bool has_item[cmr_encode_max_depth];
  bool after_key;
} cmr_encoder;

void cmr_encode_start(cmr_encoder *encoder, cmr_snapshot_format format);
void cmr_encode_dict_begin(cmr_encoder *encoder);
void cmr_encode_dict_end(cmr_encoder *encoder);
void cmr_encode_list_begin(cmr_encoder *encoder);
void cmr_encode_list_end(cmr_encoder *encoder);
/* A dict's key; the next value written is its value. */
void cmr_encode_key(cmr_encoder *encoder, const char *key);
void cmr_encode_uint(cmr_encoder *encoder, uint64_t value);
/* Text, written as UTF-8: bytes outside ASCII become '?' (symbol and file
 * names are not promised to be UTF-8). */
void cmr_encode_text(cmr_encoder *encoder, const char *text);
void cmr_encode_bool(cmr_encoder *encoder, bool value);
/* A pair of integers: a tuple in a pickle, a list of two in JSON. */
void cmr_encode_pair(cmr_encoder *encoder, uint64_t first, uint64_t second);
/* The key and a value, in one call. */
void cmr_encode_key_uint(cmr_encoder *encoder, const char *key, uint64_t value);
void cmr_encode_key_text(cmr_encoder *encoder, const char *key, const char *text);
/* Ends the value (a pickle's STOP): the bytes in *out (free() them),
 * followed by a NUL that *length does not count, or CMR_ERROR_OUT_OF_MEMORY (nothing to free). */
cmr_status cmr_encode_finish(cmr_encoder *encoder, char **out, size_t *length);

#endif /* CMR_SNAPSHOT_ENCODE_H */
