/* SPDX-License-Identifier: Apache-2.0 */
/* Stack expressions (cmr/stack.h): a recursive-descent parser over the
 * constructor table generated from spec/ (stack_table.h). Each resource is
 * made as soon as its arguments are parsed, innermost first; the stack keeps
 * the creator's share of every one, and the canonical expression (every
 * default written out) is built alongside. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h> /* isfinite, a macro: no libm */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size_text.h"
#include "stack_table.h"
#include "text.h"

enum { cmr_stack_max_depth = 32, cmr_stack_max_name = 64 };

/* What a cmr_stack handle (an object token) names. */
typedef struct cmr_stack_object {
  cmr_object object;      /* first: the counted-object header */
  cmr_resource_ref *refs; /* made, innermost first; the last is the top */
  size_t count;
  size_t capacity;
  char **strings; /* string arguments, kept while the resources may read them */
  size_t string_count;
  char *expression;
} cmr_stack_object;

/* ---- the parser's state ------------------------------------------------------------- */

typedef struct cmr_parser {
  const char *source;
  size_t at;
  int depth;
  cmr_stack_object *stack;
  /* cmr_stack_parse_over's leaf expression and its resource (NULL for
   * cmr_stack_parse): what every other leaf gives way to. */
  const char *leaf;
  const cmr_stack_resource *leaf_resource;
} cmr_parser;

/* Columns count from 1, positions from 0. */
static size_t cmr_column(size_t at) { return at + 1; }

static cmr_status cmr_syntax(const cmr_parser *parser, size_t at, const char *format, ...) CMR_PRINTF(3, 4);

static cmr_status cmr_syntax(const cmr_parser *parser, size_t at, const char *format, ...) {
  char problem[768];
  va_list args;
  va_start(args, format);
  vsnprintf(problem, sizeof problem, format, args);
  va_end(args);
  const char *near = parser->source + at;
  if (*near == '\0')
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "cmr_stack_parse: column %zu (the end): %s", cmr_column(at), problem);
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "cmr_stack_parse: column %zu (at \"%.16s%s\"): %s", cmr_column(at), near,
                   strlen(near) > 16 ? "..." : "", problem);
}

static void cmr_skip_spaces(cmr_parser *parser) {
  while (isspace((unsigned char)parser->source[parser->at])) parser->at++;
}

static char cmr_peek(cmr_parser *parser) {
  cmr_skip_spaces(parser);
  return parser->source[parser->at];
}

static bool cmr_is_name_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* A name ([A-Za-z_][A-Za-z0-9_]*) into `name`; false when none starts here. */
static bool cmr_read_name(cmr_parser *parser, char name[cmr_stack_max_name]) {
  cmr_skip_spaces(parser);
  size_t start = parser->at, length = 0;
  if (!isalpha((unsigned char)parser->source[start]) && parser->source[start] != '_') return false;
  while (cmr_is_name_char(parser->source[start + length])) length++;
  if (length >= cmr_stack_max_name) length = cmr_stack_max_name - 1; /* longer names match nothing */
  memcpy(name, parser->source + start, length);
  name[length] = '\0';
  while (cmr_is_name_char(parser->source[parser->at])) parser->at++;
  return true;
}

/* The bare token of a value: up to a comma, a closing parenthesis or a space. */
static size_t cmr_token_length(const cmr_parser *parser) {
  size_t length = 0;
  for (char c;
       (c = parser->source[parser->at + length]) != '\0' && c != ',' && c != ')' && !isspace((unsigned char)c);) {
    length++;
  }
  return length;
}

static bool cmr_token_is(const cmr_parser *parser, size_t length, const char *word) {
  return length == strlen(word) && strncmp(parser->source + parser->at, word, length) == 0;
}

/* ---- values ------------------------------------------------------------------------ */

static cmr_status cmr_bad_value(const cmr_parser *parser, size_t length, const cmr_stack_param *param,
                                const char *expected) {
  return cmr_syntax(parser, parser->at, "bad value \"%.*s%s\" for %s: expected %s",
                    CMR_QUOTE_N(parser->source + parser->at, length), param->name, expected);
}

/* A size's text runs to the next comma or parenthesis, less the spaces
 * before it: the grammar allows blanks between the number and its unit. */
static size_t cmr_size_length(const cmr_parser *parser) {
  const char *text = parser->source + parser->at;
  size_t length = strcspn(text, ",)");
  while (length > 0 && isspace((unsigned char)text[length - 1])) length--;
  return length;
}

/* The one size grammar (size_text.h); the status of a refusal is kept
 * (CMR_ERROR_SIZE_OVERFLOW for a size too large). */
static cmr_status cmr_parse_size_value(const cmr_parser *parser, size_t length, const cmr_stack_param *param,
                                       size_t *out) {
  const char *problem = NULL;
  cmr_status status = cmr_size_from_text(parser->source + parser->at, length, out, &problem);
  if (status == CMR_SUCCESS) return status;
  if (problem == NULL) {
    return cmr_error_context(status, "cmr_stack_parse: column %zu: %s", cmr_column(parser->at), param->name);
  }
  cmr_syntax(parser, parser->at, "bad value \"%.*s%s\" for %s: %s", CMR_QUOTE_N(parser->source + parser->at, length),
             param->name, problem);
  return status;
}

static size_t cmr_digits(const char *text, size_t at, size_t length) {
  size_t start = at;
  while (at < length && isdigit((unsigned char)text[at])) at++;
  return at - start;
}

/* Whether the token is an int as documented, [-]digits, or with `real` a
 * double, [-]digits[.digits][e[+|-]digits]: no '+', hexadecimal, inf or nan,
 * which strtol and strtod would also take. */
static bool cmr_is_decimal(const char *text, size_t length, bool real) {
  size_t at = length > 0 && text[0] == '-' ? 1 : 0;
  size_t digits = cmr_digits(text, at, length);
  if (digits == 0) return false;
  at += digits;
  if (real && at < length && text[at] == '.') {
    digits = cmr_digits(text, ++at, length);
    if (digits == 0) return false;
    at += digits;
  }
  if (real && at < length && (text[at] == 'e' || text[at] == 'E')) {
    if (++at < length && (text[at] == '+' || text[at] == '-')) at++;
    digits = cmr_digits(text, at, length);
    if (digits == 0) return false;
    at += digits;
  }
  return at == length;
}

static cmr_status cmr_parse_int(const cmr_parser *parser, size_t length, const cmr_stack_param *param, int *out) {
  const char *token = parser->source + parser->at;
  errno = 0;
  long number = cmr_is_decimal(token, length, false) ? strtol(token, NULL, 10) : 0;
  if (!cmr_is_decimal(token, length, false) || errno != 0 || number < INT_MIN || number > INT_MAX) {
    char expected[80];
    snprintf(expected, sizeof expected, "an integer ([-]digits, from %d to %d)", INT_MIN, INT_MAX);
    return cmr_bad_value(parser, length, param, expected);
  }
  *out = (int)number;
  return CMR_SUCCESS;
}

/* strtod's ERANGE refuses what would overflow, and what would underflow to 0
 * or lose precision as a subnormal (1e-400): nothing is rounded to 0. */
static cmr_status cmr_parse_double(const cmr_parser *parser, size_t length, const cmr_stack_param *param, double *out) {
  const char *token = parser->source + parser->at;
  errno = 0;
  *out = cmr_is_decimal(token, length, true) ? strtod(token, NULL) : 0;
  if (!cmr_is_decimal(token, length, true) || errno != 0 || !isfinite(*out)) {
    return cmr_bad_value(parser, length, param, "a number ([-]digits[.digits][e[+|-]digits], in a double's range)");
  }
  return CMR_SUCCESS;
}

static cmr_status cmr_parse_bool(const cmr_parser *parser, size_t length, const cmr_stack_param *param, bool *out) {
  if (cmr_token_is(parser, length, "true") || cmr_token_is(parser, length, "false")) {
    *out = cmr_token_is(parser, length, "true");
    return CMR_SUCCESS;
  }
  return cmr_bad_value(parser, length, param, "true or false");
}

static cmr_status cmr_parse_enum(const cmr_parser *parser, size_t length, const cmr_stack_param *param, int *out) {
  for (size_t i = 0; i < param->value_count; ++i) {
    if (cmr_token_is(parser, length, param->values[i])) {
      *out = (int)i;
      return CMR_SUCCESS;
    }
  }
  char names[256] = "";
  for (size_t i = 0; i < param->value_count; ++i) {
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", param->values[i]);
  }
  return cmr_bad_value(parser, length, param, names);
}

static cmr_status cmr_parse_properties(const cmr_parser *parser, size_t length, const cmr_stack_param *param,
                                       unsigned *out) {
  static const struct {
    const char *name;
    unsigned flag;
  } flags[] = {{"device_accessible", CMR_PROPERTY_DEVICE_ACCESSIBLE},
               {"host_accessible", CMR_PROPERTY_HOST_ACCESSIBLE}};
  *out = 0;
  if (cmr_token_is(parser, length, "none")) return CMR_SUCCESS;
  const char *token = parser->source + parser->at, *end = token + length;
  while (token < end) {
    const char *bar = memchr(token, '|', (size_t)(end - token));
    size_t part = (size_t)((bar ? bar : end) - token);
    bool known = false;
    for (size_t i = 0; i < 2 && !known; ++i) {
      known = part == strlen(flags[i].name) && strncmp(token, flags[i].name, part) == 0;
      if (known) *out |= flags[i].flag;
    }
    if (!known) return cmr_bad_value(parser, length, param, "device_accessible, host_accessible (joined by |) or none");
    token += part + (bar ? 1 : 0);
  }
  return CMR_SUCCESS;
}

/* A "double-quoted" string with \" and \\ escapes, kept by the stack. */
static cmr_status cmr_parse_string(cmr_parser *parser, const cmr_stack_param *param, const char **out) {
  size_t start = parser->at;
  if (parser->source[start] != '"') {
    return cmr_syntax(parser, start, "bad value for %s: expected a \"double-quoted\" string", param->name);
  }
  cmr_text text = {0};
  cmr_text_add(&text, "", 0);
  size_t at = start + 1;
  for (; parser->source[at] != '"'; ++at) {
    char c = parser->source[at];
    if (c == '\\' && (parser->source[at + 1] == '"' || parser->source[at + 1] == '\\')) c = parser->source[++at];
    if (c == '\0') {
      free(text.data);
      return cmr_syntax(parser, start, "the string for %s has no closing quote", param->name);
    }
    cmr_text_add(&text, &c, 1);
  }
  cmr_stack_object *stack = parser->stack;
  char **strings = text.failed ? NULL : realloc(stack->strings, (stack->string_count + 1) * sizeof *strings);
  if (strings == NULL) {
    free(text.data);
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cmr_stack_parse: no host memory for a string");
  }
  stack->strings = strings;
  stack->strings[stack->string_count++] = text.data;
  *out = text.data;
  parser->at = at + 1;
  return CMR_SUCCESS;
}

static cmr_status cmr_parse_resource(cmr_parser *parser, cmr_resource_ref *out, cmr_text *canonical);

/* One value of `param`'s type at the parser's position, its text (as
 * written) appended to `canonical`. */
static cmr_status cmr_parse_value(cmr_parser *parser, const cmr_stack_param *param, cmr_stack_value *value,
                                  cmr_text *canonical) {
  cmr_skip_spaces(parser);
  size_t start = parser->at;
  if (param->type == CMR_STACK_RESOURCE) return cmr_parse_resource(parser, &value->ref, canonical);
  if (param->type == CMR_STACK_STRING) {
    cmr_status status = cmr_parse_string(parser, param, &value->string);
    if (status == CMR_SUCCESS) cmr_text_add(canonical, parser->source + start, parser->at - start);
    return status;
  }
  size_t length = param->type == CMR_STACK_SIZE ? cmr_size_length(parser) : cmr_token_length(parser);
  cmr_status status = CMR_SUCCESS;
  if (param->default_text != NULL && cmr_token_is(parser, length, param->default_text)) {
    *value = param->default_value; /* the default by its name, e.g. unlimited */
  } else {
    switch (param->type) {
    case CMR_STACK_SIZE:
      status = cmr_parse_size_value(parser, length, param, &value->size.value);
      value->size.is_set = true;
      break;
    case CMR_STACK_INT:
      status = cmr_parse_int(parser, length, param, &value->integer.value);
      value->integer.is_set = true;
      break;
    case CMR_STACK_BOOL: status = cmr_parse_bool(parser, length, param, &value->boolean); break;
    case CMR_STACK_DOUBLE: status = cmr_parse_double(parser, length, param, &value->real); break;
    case CMR_STACK_ENUM: status = cmr_parse_enum(parser, length, param, &value->enumeration); break;
    case CMR_STACK_PROPERTIES: status = cmr_parse_properties(parser, length, param, &value->properties); break;
    default: status = cmr_syntax(parser, start, "%s cannot be given in an expression", param->name); break;
    }
  }
  if (status == CMR_SUCCESS) {
    cmr_text_add(canonical, parser->source + start, length);
    parser->at += length;
  }
  return status;
}

/* ---- resources ------------------------------------------------------------------------ */

/* The length of the name written at `text` (a name read into a buffer is
 * cut at cmr_stack_max_name; a message shows it as written). */
static size_t cmr_name_length(const char *text) {
  size_t length = 0;
  while (cmr_is_name_char(text[length])) length++;
  return length;
}

static const cmr_stack_resource *cmr_find_resource(const char *name) {
  for (size_t i = 0; i < cmr_stack_resource_count; ++i) {
    if (strcmp(cmr_stack_resources[i].name, name) == 0) return &cmr_stack_resources[i];
  }
  return NULL;
}

static cmr_status cmr_unknown_resource(const cmr_parser *parser, size_t at) {
  size_t length = cmr_name_length(parser->source + at);
  char known[512] = "";
  for (size_t i = 0; i < cmr_stack_resource_count; ++i) {
    size_t used = strlen(known);
    snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", cmr_stack_resources[i].name);
  }
  return cmr_syntax(parser, at, "unknown resource \"%.*s%s\" (known: %s)", CMR_QUOTE_N(parser->source + at, length),
                    known);
}

static const cmr_stack_param *cmr_find_param(const cmr_stack_resource *resource, const char *name, size_t *index) {
  for (size_t i = 0; i < resource->param_count; ++i) {
    if (strcmp(resource->params[i].name, name) == 0) {
      *index = i;
      return &resource->params[i];
    }
  }
  return NULL;
}

static cmr_status cmr_unknown_param(const cmr_parser *parser, size_t at, const cmr_stack_resource *resource) {
  size_t length = cmr_name_length(parser->source + at);
  char known[512] = "";
  for (size_t i = 0; i < resource->param_count; ++i) {
    size_t used = strlen(known);
    snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", resource->params[i].name);
  }
  return cmr_syntax(parser, at, "%s has no parameter \"%.*s%s\" (%s%s)", resource->name,
                    CMR_QUOTE_N(parser->source + at, length),
                    resource->param_count ? "its parameters: " : "it takes none", known);
}

/* The first resource parameter: what a positional argument gives. */
static size_t cmr_positional_index(const cmr_stack_resource *resource) {
  for (size_t i = 0; i < resource->param_count; ++i) {
    if (resource->params[i].type == CMR_STACK_RESOURCE) return i;
  }
  return SIZE_MAX;
}

/* Whether `resource` takes no upstream: no parameter of it is a resource. */
static bool cmr_is_leaf(const cmr_stack_resource *resource) { return cmr_positional_index(resource) == SIZE_MAX; }

/* What an expression alone gives: the first resource parameter not given
 * yet (the upstream, then any other in the spec's order: fallback's
 * fallback); once all are given, the first again (given twice, then);
 * SIZE_MAX for a leaf. */
static size_t cmr_next_positional_index(const cmr_stack_resource *resource, const bool *given) {
  for (size_t i = 0; i < resource->param_count; ++i) {
    if (resource->params[i].type == CMR_STACK_RESOURCE && !given[i]) return i;
  }
  return cmr_positional_index(resource);
}

/* One argument, `name=value` or (for a resource) an expression alone; its
 * canonical text goes to texts[index]. */
static cmr_status cmr_parse_argument(cmr_parser *parser, const cmr_stack_resource *resource, cmr_stack_value *values,
                                     bool *given, cmr_text *texts) {
  size_t start = parser->at;
  char first = cmr_peek(parser);
  if (first == '\0' || first == ')' || first == ',') {
    return cmr_syntax(parser, parser->at, "expected an argument of %s", resource->name);
  }
  start = parser->at;
  char name[cmr_stack_max_name];
  bool named = cmr_read_name(parser, name) && cmr_peek(parser) == '=';
  size_t index = SIZE_MAX;
  if (named) {
    if (cmr_find_param(resource, name, &index) == NULL) return cmr_unknown_param(parser, start, resource);
    parser->at++; /* the '=' */
  } else {
    parser->at = start;
    index = cmr_next_positional_index(resource, given);
    if (index == SIZE_MAX) {
      return cmr_syntax(parser, start, "%s takes no upstream: write its parameters as name=value", resource->name);
    }
  }
  if (given[index]) {
    return cmr_syntax(parser, start, "%s: %s is given twice", resource->name, resource->params[index].name);
  }
  given[index] = true;
  return cmr_parse_value(parser, &resource->params[index], &values[index], &texts[index]);
}

static cmr_status cmr_parse_arguments(cmr_parser *parser, const cmr_stack_resource *resource, cmr_stack_value *values,
                                      bool *given, cmr_text *texts) {
  parser->at++; /* the '(' */
  if (cmr_peek(parser) == ')') {
    parser->at++;
    return CMR_SUCCESS;
  }
  for (;;) {
    cmr_status status = cmr_parse_argument(parser, resource, values, given, texts);
    if (status != CMR_SUCCESS) return status;
    char next = cmr_peek(parser);
    parser->at++;
    if (next == ')') return CMR_SUCCESS;
    if (next != ',') {
      return next == '\0'
                 ? cmr_syntax(parser, parser->at - 1, "the arguments of %s are not closed with )", resource->name)
                 : cmr_syntax(parser, parser->at - 1, "expected , or ) after an argument of %s, not '%c'",
                              resource->name, next);
    }
  }
}

/* Defaults for what was not given; an error for what has none. */
static cmr_status cmr_complete(const cmr_parser *parser, size_t at, const cmr_stack_resource *resource,
                               cmr_stack_value *values, const bool *given, cmr_text *texts) {
  for (size_t i = 0; i < resource->param_count; ++i) {
    const cmr_stack_param *param = &resource->params[i];
    if (given[i]) continue;
    if (param->default_text == NULL) {
      return param->type == CMR_STACK_RESOURCE && i == cmr_positional_index(resource)
                 ? cmr_syntax(parser, at, "%s needs an upstream, e.g. %s(cuda)", resource->name, resource->name)
             : param->type == CMR_STACK_UNWRITABLE
                 ? cmr_syntax(parser, at, "%s cannot be made from an expression: %s cannot be written in one",
                              resource->name, param->name)
                 : cmr_syntax(parser, at, "%s needs %s=...", resource->name, param->name);
    }
    values[i] = param->default_value;
    cmr_text_put(&texts[i], param->default_text);
  }
  return CMR_SUCCESS;
}

static void cmr_write_canonical(const cmr_stack_resource *resource, cmr_text *texts, cmr_text *canonical) {
  cmr_text_put(canonical, resource->name);
  if (resource->param_count == 0) return;
  cmr_text_put(canonical, "(");
  for (size_t i = 0; i < resource->param_count; ++i) {
    if (i > 0) cmr_text_put(canonical, ", ");
    if (resource->params[i].type != CMR_STACK_RESOURCE) {
      cmr_text_put(canonical, resource->params[i].name);
      cmr_text_put(canonical, "=");
    }
    cmr_text_add(canonical, texts[i].data != NULL ? texts[i].data : "", texts[i].length);
    if (texts[i].failed) canonical->failed = true;
  }
  cmr_text_put(canonical, ")");
}

static cmr_status cmr_keep(cmr_stack_object *stack, cmr_resource_ref ref) {
  if (stack->count == stack->capacity) {
    size_t capacity = stack->capacity ? stack->capacity * 2 : 4;
    cmr_resource_ref *refs = realloc(stack->refs, capacity * sizeof *refs);
    if (refs == NULL) {
      cmr_ref_drop(ref);
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cmr_stack_parse: no host memory for the stack");
    }
    stack->refs = refs;
    stack->capacity = capacity;
  }
  stack->refs[stack->count++] = ref;
  return CMR_SUCCESS;
}

static cmr_status cmr_make(const cmr_parser *parser, size_t at, const cmr_stack_resource *resource,
                           const cmr_stack_value *values, cmr_resource_ref *out) {
  cmr_status status = resource->make(values, out);
  if (status != CMR_SUCCESS) {
    return cmr_error_context(status, "cmr_stack_parse: column %zu: making %s", cmr_column(at), resource->name);
  }
  return cmr_keep(parser->stack, *out);
}

/* The leaf of cmr_stack_parse_over, made where a leaf gave way to it, its
 * canonical text appended to `canonical`. */
static cmr_status cmr_parse_replacement(const cmr_parser *parser, cmr_resource_ref *out, cmr_text *canonical) {
  cmr_parser replacement = {parser->leaf, 0, parser->depth - 1, parser->stack, NULL, NULL};
  cmr_status status = cmr_parse_resource(&replacement, out, canonical);
  if (status == CMR_SUCCESS && cmr_peek(&replacement) != '\0') {
    size_t rest = strlen(replacement.source + replacement.at);
    status = cmr_syntax(&replacement, replacement.at, "unexpected \"%.*s%s\" after the leaf",
                        CMR_QUOTE_N(replacement.source + replacement.at, rest));
  }
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "cmr_stack_parse_over: the leaf");
}

static cmr_status cmr_parse_resource(cmr_parser *parser, cmr_resource_ref *out, cmr_text *canonical) {
  cmr_skip_spaces(parser);
  size_t start = parser->at;
  char name[cmr_stack_max_name];
  if (!cmr_read_name(parser, name)) {
    return parser->source[start] == '\0'
               ? cmr_syntax(parser, start, "expected a resource name, found the end")
               : cmr_syntax(parser, start, "expected a resource name, not '%c'", parser->source[start]);
  }
  const cmr_stack_resource *resource = cmr_find_resource(name);
  if (resource == NULL) return cmr_unknown_resource(parser, start);
  if (++parser->depth > cmr_stack_max_depth) {
    return cmr_syntax(parser, start, "the stack is nested more than %d deep", cmr_stack_max_depth);
  }
  size_t count = resource->param_count;
  cmr_stack_value *values = calloc(count + 1, sizeof *values);
  bool *given = calloc(count + 1, sizeof *given);
  cmr_text *texts = calloc(count + 1, sizeof *texts);
  cmr_status status =
      values && given && texts ? CMR_SUCCESS : cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cmr_stack_parse: no host memory");
  if (status == CMR_SUCCESS && cmr_peek(parser) == '(')
    status = cmr_parse_arguments(parser, resource, values, given, texts);
  if (status == CMR_SUCCESS) status = cmr_complete(parser, start, resource, values, given, texts);
  bool gives_way = parser->leaf_resource != NULL && cmr_is_leaf(resource) && resource != parser->leaf_resource;
  if (gives_way) {
    if (status == CMR_SUCCESS) status = cmr_parse_replacement(parser, out, canonical);
  } else {
    if (status == CMR_SUCCESS) status = cmr_make(parser, start, resource, values, out);
    if (status == CMR_SUCCESS) cmr_write_canonical(resource, texts, canonical);
  }
  for (size_t i = 0; texts != NULL && i < count; ++i) free(texts[i].data);
  free(values), free(given), free(texts);
  parser->depth--;
  return status;
}

/* ---- the stack ---------------------------------------------------------------------- */

static void cmr_stack_finalize(cmr_object *object) {
  cmr_stack_object *stack = (cmr_stack_object *)object;
  while (stack->count > 0) cmr_ref_drop(stack->refs[--stack->count]); /* the top first */
  for (size_t i = 0; i < stack->string_count; ++i) free(stack->strings[i]);
  free(stack->strings);
  free(stack->refs);
  free(stack->expression);
  free(stack);
}

static const cmr_object_type cmr_stack_object_type = {"stack", cmr_stack_finalize, NULL};

/* The resource `leaf` names, which must take no upstream. */
static cmr_status cmr_leaf_resource(const char *leaf, const cmr_stack_resource **out) {
  cmr_parser parser = {leaf, 0, 0, NULL, NULL, NULL};
  cmr_skip_spaces(&parser);
  size_t start = parser.at;
  char name[cmr_stack_max_name];
  cmr_status status = CMR_SUCCESS;
  if (!cmr_read_name(&parser, name)) {
    status = cmr_syntax(&parser, start, "expected the name of a resource that takes no upstream");
  } else if ((*out = cmr_find_resource(name)) == NULL) {
    status = cmr_unknown_resource(&parser, start);
  } else if (!cmr_is_leaf(*out)) {
    status = cmr_syntax(&parser, start, "%s takes an upstream: a leaf is a resource that takes none", name);
  }
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "cmr_stack_parse_over: the leaf");
}

/* cmr_stack_parse, over `leaf` unless it is NULL (`what` names the call). */
static cmr_status cmr_parse_stack(const char *what, const char *expression, const char *leaf, cmr_stack **out) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  *out = NULL;
  if (expression == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: expression is NULL", what);
  const cmr_stack_resource *leaf_resource = NULL;
  if (leaf != NULL) {
    cmr_status status = cmr_leaf_resource(leaf, &leaf_resource);
    if (status != CMR_SUCCESS) return status;
  }
  cmr_stack_object *stack = calloc(1, sizeof *stack);
  if (stack == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cmr_stack_parse: no host memory for the stack");
  cmr_parser parser = {expression, 0, 0, stack, leaf, leaf_resource};
  cmr_text canonical = {0};
  cmr_resource_ref top;
  cmr_status status = cmr_parse_resource(&parser, &top, &canonical);
  if (status == CMR_SUCCESS && cmr_peek(&parser) != '\0') {
    size_t rest = strlen(expression + parser.at);
    status = cmr_syntax(&parser, parser.at, "unexpected \"%.*s%s\" after the expression",
                        CMR_QUOTE_N(expression + parser.at, rest));
  }
  if (status == CMR_SUCCESS && canonical.failed) {
    status = cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cmr_stack_parse: no host memory for the expression");
  }
  stack->expression = canonical.data;
  void *token = NULL;
  if (status == CMR_SUCCESS) {
    status = cmr_object_register(&stack->object, &cmr_stack_object_type, "cmr_stack_parse", &token);
  }
  if (status != CMR_SUCCESS) {
    cmr_stack_finalize(&stack->object);
    return status;
  }
  *out = token;
  return CMR_SUCCESS;
}

cmr_status cmr_stack_parse(const char *expression, cmr_stack **out) {
  return cmr_parse_stack("cmr_stack_parse", expression, NULL, out);
}

cmr_status cmr_stack_parse_over(const char *expression, const char *leaf, cmr_stack **out) {
  if (leaf == NULL) {
    if (out != NULL) *out = NULL;
    return cmr_error(CMR_ERROR_NULL_POINTER, "cmr_stack_parse_over: leaf is NULL");
  }
  return cmr_parse_stack("cmr_stack_parse_over", expression, leaf, out);
}

/* The stack a handle names, or the error any use of it reports. */
static cmr_status cmr_stack_resolve(const cmr_stack *handle, const char *what, cmr_stack_object **out) {
  return cmr_object_resolve(handle, &cmr_stack_object_type, what, (cmr_object **)out);
}

cmr_status cmr_stack_destroy(cmr_stack *stack) {
  if (stack == NULL || cmr_object_forget_parents(stack)) return CMR_SUCCESS;
  cmr_stack_object *object;
  cmr_status status = cmr_stack_resolve(stack, "cmr_stack_destroy: stack", &object);
  return status == CMR_SUCCESS ? cmr_object_release(stack, "cmr_stack_destroy: stack") : status;
}

cmr_status cmr_stack_ref(const cmr_stack *stack, cmr_resource_ref *out) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "cmr_stack_ref: out is NULL");
  cmr_stack_object *object;
  cmr_status status = cmr_stack_resolve(stack, "cmr_stack_ref: stack", &object);
  if (status == CMR_SUCCESS) *out = object->refs[object->count - 1];
  return status;
}

cmr_status cmr_stack_leaf(const cmr_stack *stack, cmr_resource_ref *out) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "cmr_stack_leaf: out is NULL");
  cmr_stack_object *object;
  cmr_status status = cmr_stack_resolve(stack, "cmr_stack_leaf: stack", &object);
  if (status == CMR_SUCCESS) *out = object->refs[0];
  return status;
}

cmr_status cmr_stack_expression(const cmr_stack *stack, const char **out) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "cmr_stack_expression: out is NULL");
  cmr_stack_object *object;
  cmr_status status = cmr_stack_resolve(stack, "cmr_stack_expression: stack", &object);
  if (status == CMR_SUCCESS) *out = object->expression;
  return status;
}
