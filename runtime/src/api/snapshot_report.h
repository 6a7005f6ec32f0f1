/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report of a snapshot: the one template
 * (runtime/report/report.html, compiled in) with the snapshot's JSON in
 * it, which the page's script draws as SVG. The C tool (cmr-report), the
 * C writer (CMR_SNAPSHOT_HTML) and Python's cmr.viz all render through it. */
#ifndef CMR_SNAPSHOT_REPORT_H
#define CMR_SNAPSHOT_REPORT_H

#include <stddef.h>

#include <cmr/core.h>

/* The template as compiled in (snapshot_template.c, made by the build). */
extern const char cmr_report_template[];
extern const size_t cmr_report_template_length;

/* The page for `length` bytes of JSON at `json` (a JSON object, else
 * CMR_ERROR_INVALID_ARGUMENT naming `what`): in *out (free() it), *out_length bytes. */
cmr_status cmr_report_render(const char *json, size_t length, const char *what, char **out, size_t *out_length);
/* When `made` (the status of making `bytes`) is CMR_SUCCESS, writes the
 * `length` bytes to `path` (CMR_ERROR_IO saying why, naming `what`); frees
 * `bytes` either way. Returns `made`, or the write's failure. */
cmr_status cmr_report_keep(cmr_status made, char *bytes, size_t length, const char *path, const char *what);

#endif /* CMR_SNAPSHOT_REPORT_H */
