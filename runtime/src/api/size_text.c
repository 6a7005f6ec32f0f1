/* SPDX-License-Identifier: Apache-2.0 */
/* The size grammar (size_text.h, spec/README.md): a whole or decimal number
 * and a unit, or a whole percentage of the current device's free memory.
 * The arithmetic is exact, in integers: a decimal is accepted only when it
 * comes to a whole number of bytes, so nothing is rounded. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "size_text.h"

typedef struct cmr_size_unit {
  const char *name; /* as documented; matched in any case */
  uint64_t bytes;
} cmr_size_unit;

static const cmr_size_unit cmr_size_units[] = {
    {"B", 1},
    {"KB", UINT64_C(1000)},
    {"MB", UINT64_C(1000000)},
    {"GB", UINT64_C(1000000000)},
    {"TB", UINT64_C(1000000000000)},
    {"PB", UINT64_C(1000000000000000)},
    {"KiB", UINT64_C(1) << 10},
    {"MiB", UINT64_C(1) << 20},
    {"GiB", UINT64_C(1) << 30},
    {"TiB", UINT64_C(1) << 40},
    {"PiB", UINT64_C(1) << 50},
};

static bool cmr_is_digit(char c) { return c >= '0' && c <= '9'; }
static bool cmr_is_blank(char c) { return c == ' ' || c == '\t'; }

/* Says why in *problem and returns `status`. */
static cmr_status cmr_size_refused(cmr_status status, const char *why, const char **problem) {
  *problem = why;
  return status;
}

static char cmr_lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* The unit spelt by the `length` characters at `text`, in any case, or NULL. */
static const cmr_size_unit *cmr_size_unit_named(const char *text, size_t length) {
  for (size_t i = 0; i < sizeof cmr_size_units / sizeof cmr_size_units[0]; ++i) {
    const char *name = cmr_size_units[i].name;
    bool same = strlen(name) == length;
    for (size_t j = 0; same && j < length; ++j) same = cmr_lower(name[j]) == cmr_lower(text[j]);
    if (same) return &cmr_size_units[i];
  }
  return NULL;
}

/* digits × unit + 0.fraction × unit, exactly. The fraction's digits are
 * folded in from the last: each step's value is (digit × unit + the value
 * so far) / 10, which is whole at every step exactly when the total is (a
 * tail of the fraction times the unit is whole whenever the whole fraction
 * times the unit is), and stays below the unit, so nothing overflows. */
static cmr_status cmr_size_value(const char *digits, size_t digit_count, const char *fraction, size_t fraction_count,
                                 uint64_t unit, size_t *out, const char **problem) {
  static const char too_large[] = "it is more bytes than a size_t holds";
  uint64_t whole = 0;
  for (size_t i = 0; i < digit_count; ++i) {
    unsigned digit = (unsigned)(digits[i] - '0');
    if (whole > (UINT64_MAX - digit) / 10) return cmr_size_refused(CMR_ERROR_SIZE_OVERFLOW, too_large, problem);
    whole = whole * 10 + digit;
  }
  uint64_t part = 0;
  for (size_t i = fraction_count; i-- > 0;) {
    uint64_t scaled = (uint64_t)(fraction[i] - '0') * unit + part;
    if (scaled % 10 != 0) {
      return cmr_size_refused(CMR_ERROR_INVALID_ARGUMENT,
                              "it is not a whole number of bytes (write it in a smaller unit)", problem);
    }
    part = scaled / 10;
  }
  if (whole > (UINT64_MAX - part) / unit) return cmr_size_refused(CMR_ERROR_SIZE_OVERFLOW, too_large, problem);
  uint64_t bytes = whole * unit + part;
  if (bytes > SIZE_MAX) return cmr_size_refused(CMR_ERROR_SIZE_OVERFLOW, too_large, problem);
  *out = (size_t)bytes;
  return CMR_SUCCESS;
}

/* A whole percentage, 0 to 100, of the current device's free memory. */
static cmr_status cmr_size_percentage(const char *digits, size_t digit_count, bool has_fraction, size_t *out,
                                      const char **problem) {
  static const char range[] = "a percentage is a whole number from 0 to 100";
  unsigned percent = 0;
  for (size_t i = 0; i < digit_count && percent <= 100; ++i) percent = percent * 10 + (unsigned)(digits[i] - '0');
  if (has_fraction || percent > 100) return cmr_size_refused(CMR_ERROR_INVALID_ARGUMENT, range, problem);
  *problem = NULL; /* a failed device query records its own message */
  return cmr_percent_of_free_device_memory((int)percent, out);
}

cmr_status cmr_size_from_text(const char *text, size_t length, size_t *out, const char **problem) {
  size_t at = 0;
  while (at < length && cmr_is_digit(text[at])) at++;
  size_t digit_count = at;
  if (digit_count == 0) {
    return cmr_size_refused(CMR_ERROR_INVALID_ARGUMENT, length == 0 ? "it is empty" : "it does not start with a digit",
                            problem);
  }
  const char *fraction = text + at;
  size_t fraction_count = 0;
  bool has_fraction = at < length && text[at] == '.';
  if (has_fraction) {
    fraction = text + ++at;
    while (at < length && cmr_is_digit(text[at])) at++, fraction_count++;
    if (fraction_count == 0)
      return cmr_size_refused(CMR_ERROR_INVALID_ARGUMENT, "a decimal point needs digits after it", problem);
  }
  size_t number_end = at;
  while (at < length && cmr_is_blank(text[at])) at++;
  if (at == length && at != number_end) {
    return cmr_size_refused(CMR_ERROR_INVALID_ARGUMENT, "blanks after the number need a unit after them", problem);
  }
  const char *unit_text = text + at;
  size_t unit_length = length - at;
  if (unit_length == 1 && *unit_text == '%') return cmr_size_percentage(text, digit_count, has_fraction, out, problem);
  const cmr_size_unit *unit = unit_length == 0 ? &cmr_size_units[0] : cmr_size_unit_named(unit_text, unit_length);
  if (unit == NULL) {
    return cmr_size_refused(CMR_ERROR_INVALID_ARGUMENT,
                            "what follows the number is not a unit (B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, "
                            "PiB, in any case, or %)",
                            problem);
  }
  return cmr_size_value(text, digit_count, fraction, fraction_count, unit->bytes, out, problem);
}

cmr_status cmr_parse_size(const char *text, size_t *out) {
  static const char what[] = "cmr_parse_size";
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  *out = 0;
  if (text == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: text is NULL", what);
  const char *problem = NULL;
  size_t bytes = 0;
  cmr_status status = cmr_size_from_text(text, strlen(text), &bytes, &problem);
  if (status == CMR_SUCCESS) {
    *out = bytes;
  } else if (problem != NULL) {
    status = cmr_error(status, "%s: \"%s\" is not a size: %s", what, text, problem);
  } else {
    status = cmr_error_context(status, "%s: \"%s\"", what, text);
  }
  return status;
}
