/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report (see snapshot_report.h). The template holds one
 * placeholder where the JSON goes, inside a <script type="application/json">
 * element; every "</" of the JSON is written "<\/" (the same string to a
 * JSON reader) so that no text in it can end the element. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "snapshot_report.h"

#define CMR_REPORT_PLACEHOLDER "\"__CMR_SNAPSHOT_JSON__\""

/* `text` with its leading and trailing white space skipped: [*start, *end). */
static void cmr_report_trim(const char *text, size_t length, size_t *start, size_t *end) {
  *start = 0;
  *end = length;
  while (*start < *end && strchr(" \t\r\n", text[*start]) != NULL && text[*start] != '\0') ++*start;
  while (*end > *start && strchr(" \t\r\n", text[*end - 1]) != NULL && text[*end - 1] != '\0') --*end;
}

cmr_status cmr_report_render(const char *json, size_t length, const char *what, char **out, size_t *out_length) {
  size_t start, end;
  cmr_report_trim(json, length, &start, &end);
  if (end - start < 2 || json[start] != '{' || json[end - 1] != '}' || memchr(json, '\0', length) != NULL) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: the snapshot is not a JSON object (%zu bytes)", what, length);
  }
  const char *mark = strstr(cmr_report_template, CMR_REPORT_PLACEHOLDER);
  if (mark == NULL) return cmr_error(CMR_ERROR_INTERNAL, "%s: the report template has no placeholder", what);
  size_t before = (size_t)(mark - cmr_report_template), marked = strlen(CMR_REPORT_PLACEHOLDER);
  size_t after = cmr_report_template_length - before - marked;
  size_t slashes = 0;
  for (size_t i = start; i + 1 < end; ++i) slashes += json[i] == '<' && json[i + 1] == '/';
  char *page = malloc(before + (end - start) + slashes + after + 1);
  if (page == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the report", what);
  size_t at = 0;
  memcpy(page, cmr_report_template, before);
  at = before;
  for (size_t i = start; i < end; ++i) {
    page[at++] = json[i];
    if (json[i] == '<' && i + 1 < end && json[i + 1] == '/') page[at++] = '\\';
  }
  memcpy(page + at, mark + marked, after);
  at += after;
  page[at] = '\0';
  *out = page;
  *out_length = at;
  return CMR_SUCCESS;
}

/* Writes `length` bytes to `path`. */
static cmr_status cmr_report_save(const char *bytes, size_t length, const char *path, const char *what) {
  FILE *file = fopen(path, "wb");
  if (file == NULL) {
    return cmr_error(CMR_ERROR_IO, "%s: \"%.*s%s\" cannot be opened for writing: %s", what, CMR_QUOTE(path),
                     strerror(errno));
  }
  bool written = fwrite(bytes, 1, length, file) == length;
  int error = errno;
  if (fclose(file) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written) {
    return cmr_error(CMR_ERROR_IO, "%s: writing %zu bytes to \"%.*s%s\" failed: %s", what, length, CMR_QUOTE(path),
                     strerror(error));
  }
  return CMR_SUCCESS;
}

cmr_status cmr_report_keep(cmr_status made, char *bytes, size_t length, const char *path, const char *what) {
  cmr_status status = made == CMR_SUCCESS ? cmr_report_save(bytes, length, path, what) : made;
  free(bytes);
  return status;
}

cmr_status cmr_snapshot_report(const char *json, size_t length, const char *path) {
  static const char what[] = "cmr_snapshot_report";
  if (json == NULL || path == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: %s is NULL", what, json == NULL ? "json" : "path");
  }
  char *page = NULL;
  size_t page_length = 0;
  cmr_status made = cmr_report_render(json, length, what, &page, &page_length);
  return cmr_report_keep(made, page, page_length, path, what);
}
