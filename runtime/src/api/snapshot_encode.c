/* SPDX-License-Identifier: Apache-2.0 */
/* Pickle and JSON from one sequence of calls (see snapshot_encode.h). The
 * pickle opcodes used are those of Python's pickle module
 * (Lib/pickletools.py documents them): PROTO, EMPTY_DICT / EMPTY_LIST with
 * MARK and SETITEMS / APPENDS, BININT / LONG1, BINUNICODE (and, at
 * protocol 4, SHORT_BINUNICODE), NEWTRUE / NEWFALSE, TUPLE2, STOP. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "snapshot_encode.h"

static bool cmr_encode_pickled(const cmr_encoder *encoder) { return encoder->format != CMR_SNAPSHOT_JSON; }

static void cmr_encode_bytes(cmr_encoder *encoder, const void *bytes, size_t count) {
  cmr_text_add(&encoder->out, bytes, count);
}

static void cmr_encode_byte(cmr_encoder *encoder, char byte) { cmr_encode_bytes(encoder, &byte, 1); }

/* JSON: the comma before an item of a list (a dict's value follows its key). */
static void cmr_encode_item(cmr_encoder *encoder) {
  if (cmr_encode_pickled(encoder)) return;
  if (encoder->after_key) {
    encoder->after_key = false;
    return;
  }
  if (encoder->depth > 0 && encoder->has_item[encoder->depth - 1]) cmr_encode_byte(encoder, ',');
  if (encoder->depth > 0) encoder->has_item[encoder->depth - 1] = true;
}

static void cmr_encode_open(cmr_encoder *encoder, char pickled, char json) {
  cmr_encode_item(encoder);
  if (cmr_encode_pickled(encoder)) {
    cmr_encode_bytes(encoder, (char[]){pickled, '('}, 2); /* the container, then MARK */
  } else {
    cmr_encode_byte(encoder, json);
  }
  if (encoder->depth == cmr_encode_max_depth) {
    encoder->out.failed = true; /* the snapshot nests a few levels: a bug, never input */
    return;
  }
  encoder->has_item[encoder->depth++] = false;
}

static void cmr_encode_close(cmr_encoder *encoder, char pickled, char json) {
  if (encoder->depth > 0) --encoder->depth;
  cmr_encode_byte(encoder, cmr_encode_pickled(encoder) ? pickled : json);
}

void cmr_encode_start(cmr_encoder *encoder, cmr_snapshot_format format) {
  *encoder = (cmr_encoder){.format = format};
  if (cmr_encode_pickled(encoder))
    cmr_encode_bytes(encoder, (char[]){'\x80', format == CMR_SNAPSHOT_PICKLE ? 4 : 2}, 2);
}

void cmr_encode_dict_begin(cmr_encoder *encoder) { cmr_encode_open(encoder, '}', '{'); }
void cmr_encode_dict_end(cmr_encoder *encoder) { cmr_encode_close(encoder, 'u', '}'); }
void cmr_encode_list_begin(cmr_encoder *encoder) { cmr_encode_open(encoder, ']', '['); }
void cmr_encode_list_end(cmr_encoder *encoder) { cmr_encode_close(encoder, 'e', ']'); }

void cmr_encode_key(cmr_encoder *encoder, const char *key) {
  cmr_encode_text(encoder, key);
  if (!cmr_encode_pickled(encoder)) {
    cmr_encode_byte(encoder, ':');
    encoder->after_key = true;
  }
}

static void cmr_encode_le(cmr_encoder *encoder, uint64_t value, unsigned count) {
  char bytes[9];
  for (unsigned i = 0; i < count; ++i) bytes[i] = (char)(value >> (8 * i));
  cmr_encode_bytes(encoder, bytes, count);
}

void cmr_encode_uint(cmr_encoder *encoder, uint64_t value) {
  cmr_encode_item(encoder);
  if (!cmr_encode_pickled(encoder)) {
    char text[24];
    int length = snprintf(text, sizeof text, "%llu", (unsigned long long)value);
    cmr_encode_bytes(encoder, text, (size_t)length);
  } else if (value <= INT32_MAX) {
    cmr_encode_byte(encoder, 'J'); /* BININT: 4 bytes, signed */
    cmr_encode_le(encoder, value, 4);
  } else {
    /* LONG1: little-endian two's complement, a zero byte on top when the
     * highest bit is set (the value is unsigned). */
    unsigned count = 1;
    while (count < 8 && (value >> (8 * count)) != 0) ++count;
    bool top = (value >> (8 * count - 1)) & 1;
    cmr_encode_bytes(encoder, (char[]){'\x8a', (char)(count + top)}, 2);
    cmr_encode_le(encoder, value, count);
    if (top) cmr_encode_byte(encoder, 0);
  }
}

/* JSON's escape of one byte, or NULL when it stands as itself. */
static const char *cmr_json_escape(unsigned char c, char spare[8]) {
  switch (c) {
  case '"': return "\\\"";
  case '\\': return "\\\\";
  case '\n': return "\\n";
  case '\t': return "\\t";
  case '<': return "\\u003c"; /* never "</script>" inside the HTML report's JSON */
  default: break;
  }
  if (c >= 0x20) return NULL;
  snprintf(spare, 8, "\\u%04x", c);
  return spare;
}

void cmr_encode_text(cmr_encoder *encoder, const char *text) {
  cmr_encode_item(encoder);
  size_t length = strlen(text);
  if (cmr_encode_pickled(encoder)) {
    if (encoder->format == CMR_SNAPSHOT_PICKLE && length < 256) {
      cmr_encode_bytes(encoder, (char[]){'\x8c', (char)length}, 2); /* SHORT_BINUNICODE */
    } else {
      cmr_encode_byte(encoder, 'X'); /* BINUNICODE */
      cmr_encode_le(encoder, length, 4);
    }
    for (size_t i = 0; i < length; ++i) cmr_encode_byte(encoder, (unsigned char)text[i] < 0x80 ? text[i] : '?');
    return;
  }
  cmr_encode_byte(encoder, '"');
  for (size_t i = 0; i < length; ++i) {
    char spare[8];
    unsigned char c = (unsigned char)text[i];
    const char *escaped = c < 0x80 ? cmr_json_escape(c, spare) : "?";
    if (escaped != NULL) {
      cmr_encode_bytes(encoder, escaped, strlen(escaped));
    } else {
      cmr_encode_byte(encoder, (char)c);
    }
  }
  cmr_encode_byte(encoder, '"');
}

void cmr_encode_bool(cmr_encoder *encoder, bool value) {
  cmr_encode_item(encoder);
  if (cmr_encode_pickled(encoder)) {
    cmr_encode_byte(encoder, value ? '\x88' : '\x89');
  } else {
    cmr_encode_bytes(encoder, value ? "true" : "false", value ? 4 : 5);
  }
}

void cmr_encode_pair(cmr_encoder *encoder, uint64_t first, uint64_t second) {
  if (!cmr_encode_pickled(encoder)) {
    cmr_encode_list_begin(encoder);
    cmr_encode_uint(encoder, first);
    cmr_encode_uint(encoder, second);
    cmr_encode_list_end(encoder);
    return;
  }
  cmr_encode_uint(encoder, first); /* the tuple's items, then TUPLE2 */
  cmr_encode_uint(encoder, second);
  cmr_encode_byte(encoder, '\x86');
}

void cmr_encode_key_uint(cmr_encoder *encoder, const char *key, uint64_t value) {
  cmr_encode_key(encoder, key);
  cmr_encode_uint(encoder, value);
}

void cmr_encode_key_text(cmr_encoder *encoder, const char *key, const char *text) {
  cmr_encode_key(encoder, key);
  cmr_encode_text(encoder, text);
}

cmr_status cmr_encode_finish(cmr_encoder *encoder, char **out, size_t *length) {
  if (cmr_encode_pickled(encoder)) cmr_encode_byte(encoder, '.'); /* STOP */
  cmr_encode_bytes(encoder, "", 0);                               /* a NUL past the end: JSON reads as a C string */
  if (encoder->out.failed || encoder->depth != 0) {
    free(encoder->out.data);
    *encoder = (cmr_encoder){0};
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "snapshot: no host memory for the snapshot's bytes");
  }
  *out = encoder->out.data;
  *length = encoder->out.length;
  return CMR_SUCCESS;
}
