/* SPDX-License-Identifier: Apache-2.0 */
/* Sizes written as text, by the one grammar of spec/README.md ("Sizes"):
 * what cmr_parse_size and the size values of stack expressions read. */
#ifndef CMR_SIZE_TEXT_H
#define CMR_SIZE_TEXT_H

#include <stddef.h>

#include <cmr/core.h>

/* The size that the `length` characters at `text` write, in *out. On
 * failure: CMR_ERROR_INVALID_ARGUMENT (not in the grammar, or not a whole
 * number of bytes) or CMR_ERROR_SIZE_OVERFLOW (more than SIZE_MAX) with
 * *problem saying why, for the caller's message; or a percentage's failed
 * device query, whose own message is recorded and *problem is NULL. */
cmr_status cmr_size_from_text(const char *text, size_t length, size_t *out, const char **problem);

#endif /* CMR_SIZE_TEXT_H */
