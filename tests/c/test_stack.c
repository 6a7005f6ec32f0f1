/* SPDX-License-Identifier: Apache-2.0 */
/* Stack expressions (over host memory): stacks that build and serve, the written
 * out expression, values of every kind, a corpus of bad expressions with
 * their messages, long values in every kind of message, ints at the ends of
 * their range, stacks over another leaf (cmr_stack_parse_over), errors of
 * the resources' own creation, CMR_RESOURCE. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"

static const char *type_of(const cmr_stack *stack) {
  cmr_resource_ref ref;
  ck_assert_ok(cmr_stack_ref(stack, &ref));
  const char *name = NULL;
  ck_assert_ok(cmr_ref_type_name(ref, &name));
  return name;
}

START_TEST(a_stack_builds_and_serves) {
  cmr_stack *stack = cmr_test_stack(
      " binning( pool(system, initial_pool_size=4MiB, maximum_pool_size=1GiB) ,min_size_exponent=10,"
      " max_size_exponent=16 ) ",
      NULL);
  ck_assert_str_eq(type_of(stack), "binning");
  cmr_resource_ref ref;
  ck_assert_ok(cmr_stack_ref(stack, &ref));
  cmr_test_use(ref, 3000, 0x5a);
  ck_assert_ok(cmr_stack_destroy(stack));
  ck_assert_status(cmr_stack_destroy(stack), CMR_ERROR_DESTROYED_HANDLE);
}
END_TEST

START_TEST(the_written_out_expression_has_every_default_and_parses_back) {
  cmr_stack *stack = cmr_test_stack("arena(pool(system,initial_pool_size=0), arena_size=8MiB)", NULL);
  const char *expected =
      "arena(pool(system, initial_pool_size=0, maximum_pool_size=unlimited, maximum_growth=unlimited, capture=serve), "
      "arena_size=8MiB, "
      "dump_log_on_failure=false, dump_path=\"\", capture=serve)";
  ck_assert_str_eq(cmr_test_expression(stack), expected);
  cmr_stack *again = cmr_test_stack(cmr_test_expression(stack), NULL);
  ck_assert_str_eq(cmr_test_expression(again), expected);
  cmr_test_destroy(again, stack);
}
END_TEST

START_TEST(the_top_outlives_the_stack_when_retained) {
  cmr_stack *stack = cmr_test_stack("pool(system, initial_pool_size=1MiB)", NULL);
  cmr_resource_ref ref;
  ck_assert_ok(cmr_stack_ref(stack, &ref));
  ck_assert_ok(cmr_ref_retain(ref));
  ck_assert_ok(cmr_stack_destroy(stack));
  cmr_test_use(ref, 100, 0x22); /* the pool still holds its upstream */
  ck_assert_ok(cmr_ref_release(ref));
}
END_TEST

typedef struct size_case {
  const char *value;
  size_t bytes;
} size_case;

static const size_case sizes[] = {
    {"4096", 4096},
    {"256B", 256},
    {"1KiB", 1024},
    {"1.5MiB", 1572864},
    {"2GiB", 2147483648u},
    {"3TiB", 3298534883328u},
    {"1KB", 1000},
    {"64MB", 64000000},
    {"2GB", 2000000000},
    {"7TB", 7000000000000u},
    {"0.5KiB", 512},
    {"1 gib", 1073741824u},
    {"1PB", 1000000000000000u},
    {"1\tPiB", 1125899906842624u},
};

/* The pool's own checks print the size as it received it, so the parsed
 * value shows without any memory being taken. */
START_TEST(sizes_in_every_unit) {
  const size_case *c = &sizes[_i];
  char expression[128], expected[128];
  size_t initial = (c->bytes + 511) / 256 * 256; /* a multiple of 256, larger than the maximum */
  snprintf(expression, sizeof expression, "pool(system, initial_pool_size=%zu, maximum_pool_size=%s)", initial,
           c->value);
  /* "... larger than maximum_pool_size N", or "maximum_pool_size N is not a multiple of 256" */
  snprintf(expected, sizeof expected, "maximum_pool_size %zu", c->bytes);
  cmr_stack *stack = NULL;
  ck_assert_status(cmr_stack_parse(expression, &stack), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(cmr_last_error_message(), expected) != NULL, "%s: \"%s\" lacks \"%s\"", expression,
                cmr_last_error_message(), expected);
}
END_TEST

/* Free memory moves while other programs (or tests) run, so the parsed
 * value is compared with a reading taken just before, within a tenth. */
START_TEST(a_percentage_is_of_free_device_memory) {
  size_t ten_percent = 0;
  ck_assert_ok(cmr_percent_of_free_device_memory(10, &ten_percent));
  char expression[128];
  snprintf(expression, sizeof expression, "pool(system, initial_pool_size=%zu, maximum_pool_size=10%%)",
           (ten_percent * 2 + 255) / 256 * 256);
  cmr_stack *stack = NULL;
  ck_assert_status(cmr_stack_parse(expression, &stack), CMR_ERROR_INVALID_ARGUMENT);
  const char *at = strstr(cmr_last_error_message(), "is larger than maximum_pool_size ");
  ck_assert_msg(at != NULL, "unexpected message \"%s\"", cmr_last_error_message());
  size_t parsed = 0;
  ck_assert_int_eq(sscanf(at, "is larger than maximum_pool_size %zu", &parsed), 1);
  ck_assert_msg(parsed >= ten_percent - ten_percent / 10 && parsed <= ten_percent + ten_percent / 10,
                "10%% parsed as %zu, but 10%% of free memory was %zu just before", parsed, ten_percent);
  ck_assert_uint_eq(parsed % 256, 0);
  stack = cmr_test_stack(
      "pool(system, initial_pool_size=0, maximum_pool_size=10%, maximum_growth=unlimited, capture=serve)", NULL);
  ck_assert_str_eq(cmr_test_expression(stack),
                   "pool(system, initial_pool_size=0, maximum_pool_size=10%, maximum_growth=unlimited, capture=serve)");
  ck_assert_ok(cmr_stack_destroy(stack));
}
END_TEST

START_TEST(named_defaults_ints_bools_and_strings) {
  /* "unlimited" asks pool for its default: SIZE_MAX given as a value would
   * be refused (not a multiple of 256). */
  cmr_stack *stack = cmr_test_stack("pool(upstream=system, maximum_pool_size=unlimited, initial_pool_size=0)", NULL);
  ck_assert_str_eq(
      cmr_test_expression(stack),
      "pool(system, initial_pool_size=0, maximum_pool_size=unlimited, maximum_growth=unlimited, capture=serve)");
  ck_assert_ok(cmr_stack_destroy(stack));
  /* Left out, the exponents take their default (-1, no automatic bins). */
  stack = cmr_test_stack("binning(system)", NULL);
  ck_assert_str_eq(cmr_test_expression(stack), "binning(system, min_size_exponent=-1, max_size_exponent=-1)");
  ck_assert_ok(cmr_stack_destroy(stack));
  stack = cmr_test_stack("binning(system, min_size_exponent=8, max_size_exponent=12)", NULL);
  ck_assert_ok(cmr_stack_destroy(stack));
  char path[] = "/tmp/cmr_stack_dump_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  char expression[256];
  snprintf(expression, sizeof expression, "arena(system, arena_size=2MiB, dump_log_on_failure=true, dump_path=\"%s\")",
           path);
  stack = cmr_test_stack(expression, NULL);
  cmr_resource_ref ref;
  ck_assert_ok(cmr_stack_ref(stack, &ref));
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(ref, 64 << 20, CMR_DEFAULT_STREAM, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ok(cmr_stack_destroy(stack));
  FILE *dump = fdopen(fd, "r");
  char line[256] = "";
  ck_assert_ptr_nonnull(fgets(line, sizeof line, dump)); /* the arena wrote where the string said */
  ck_assert_ptr_nonnull(strstr(line, "cmr arena"));
  fclose(dump);
  unlink(path);
}
END_TEST

typedef struct bad_case {
  const char *expression;
  const char *message; /* a part of the message */
} bad_case;

static const bad_case bad[] = {
    {"", "column 1 (the end): expected a resource name, found the end"},
    {"   ", "column 4 (the end): expected a resource name"},
    {"(system)", "column 1 (at \"(system)\"): expected a resource name, not '('"},
    {"poool(system)", "column 1 (at \"poool(system)\"): unknown resource \"poool\" (known: "},
    {"pool", "column 1 (at \"pool\"): pool needs an upstream, e.g. pool(cuda)"},
    {"pool()", "pool needs an upstream"},
    {"pool(system, initial_size=1)",
     "column 14 (at \"initial_size=1)\"): pool has no parameter \"initial_size\" "
     "(its parameters: upstream, initial_pool_size, maximum_pool_size, maximum_growth, capture)"},
    {"pool(system, initial_pool_size=1Q)",
     "column 32 (at \"1Q)\"): bad value \"1Q\" for initial_pool_size: what "
     "follows the number is not a unit"},
    {"pool(system, initial_pool_size=1 GiB x)", "bad value \"1 GiB x\" for initial_pool_size"},
    {"pool(system, initial_pool_size=0x100)", "bad value \"0x100\""},
    {"pool(system, initial_pool_size=1e-400)", "bad value \"1e-400\""},
    {"pool(system, initial_pool_size=50.0%)", "a percentage is a whole number from 0 to 100"},
    {"pool(system, initial_pool_size=+8)", "it does not start with a digit"},
    {"binning(system, min_size_exponent=+8)", "bad value \"+8\" for min_size_exponent: expected an integer"},
    {"binning(system, min_size_exponent=0x8)", "expected an integer"},
    {"pool(system, initial_pool_size=-1)", "bad value \"-1\" for initial_pool_size"},
    {"pool(system, initial_pool_size=1.3B)", "it is not a whole number of bytes"},
    {"pool(system, initial_pool_size=101%)", "bad value \"101%\""},
    {"pool(system, initial_pool_size=)", "bad value \"\" for initial_pool_size: it is empty"},
    {"pool(system,", "column 13 (the end): expected an argument of pool"},
    {"pool(system", "column 12 (the end): the arguments of pool are not closed with )"},
    {"pool(system; initial_pool_size=0)", "expected , or ) after an argument of pool, not ';'"},
    {"pool(system, initial_pool_size=0) x", "column 35 (at \"x\"): unexpected \"x\" after the expression"},
    {"pool(system, initial_pool_size=1MiB, initial_pool_size=2MiB)", "pool: initial_pool_size is given twice"},
    {"pool(system, system)", "pool: upstream is given twice"},
    {"system(x)", "system takes no upstream: write its parameters as name=value"},
    {"system(x=1)", "system has no parameter \"x\" (it takes none)"},
    {"callback", "callback cannot be made from an expression: allocate cannot be written in one"},
    {"pool(poool)", "column 6 (at \"poool)\"): unknown resource \"poool\""},
    {"binning(system, min_size_exponent=ten)", "bad value \"ten\" for min_size_exponent: expected an integer"},
    {"binning(system, min_size_exponent=99999999999)", "expected an integer"},
    {"arena(system, dump_log_on_failure=yes)", "bad value \"yes\" for dump_log_on_failure: expected true or false"},
    {"arena(system, dump_path=/tmp/x)", "bad value for dump_path: expected a \"double-quoted\" string"},
    {"arena(system, dump_path=\"/tmp/x)", "the string for dump_path has no closing quote"},
    {"cuda_async(export_handle_type=ipc)",
     "bad value \"ipc\" for export_handle_type: expected none, "
     "posix_file_descriptor, fabric, posix_file_descriptor_and_fabric"},
};

START_TEST(bad_expressions_say_where_and_what) {
  const bad_case *c = &bad[_i];
  cmr_stack *stack = (cmr_stack *)1;
  ck_assert_status(cmr_stack_parse(c->expression, &stack), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_null(stack);
  ck_assert_msg(strstr(cmr_last_error_message(), c->message) != NULL, "\"%s\": message \"%s\" lacks \"%s\"",
                c->expression, cmr_last_error_message(), c->message);
}
END_TEST

/* ---- over another leaf (cmr_stack_parse_over) ---- */

typedef struct over_case {
  const char *expression;
  const char *written_out; /* over "simulated(capacity=1MiB)" */
} over_case;

#define OVER "simulated(capacity=1MiB)"

static const over_case over_cases[] = {
    {"system", OVER},
    {"  system  ", OVER},
    {"statistics(system)", "statistics(" OVER ")"},
    {"statistics(upstream=system)", "statistics(" OVER ")"},
    {"limiting(upstream=system, allocation_limit=1GiB)",
     "limiting(" OVER ", allocation_limit=1GiB, allocation_alignment=256)"},
    {"limiting(allocation_limit=1GiB, upstream = system)",
     "limiting(" OVER ", allocation_limit=1GiB, allocation_alignment=256)"},
    {"statistics(upstream=limiting(upstream=tracking(upstream=system), allocation_limit=4KiB))",
     "statistics(limiting(tracking(" OVER ", capture_stacks=false), allocation_limit=4KiB, allocation_alignment=256))"},
    {"pool(sam_headroom(headroom=1GiB), initial_pool_size=0)",
     "pool(" OVER ", initial_pool_size=0, maximum_pool_size=unlimited, maximum_growth=unlimited, capture=serve)"},
    /* A leaf this build cannot make gives way all the same. */
    {"statistics(cuda)", "statistics(" OVER ")"},
    {"statistics(cuda_async(initial_pool_size=1GiB))", "statistics(" OVER ")"},
    /* A leaf of the same name stays, with its arguments. */
    {"statistics(simulated(capacity=64KiB))", "statistics(simulated(capacity=64KiB))"},
    {"simulated", "simulated(capacity=1099511627776)"},
};

START_TEST(the_leaf_gives_way_wherever_it_is_written) {
  const over_case *c = &over_cases[_i];
  cmr_stack *stack = NULL;
  ck_assert_msg(cmr_stack_parse_over(c->expression, OVER, &stack) == CMR_SUCCESS, "\"%s\": %s", c->expression,
                cmr_last_error_message());
  ck_assert_str_eq(cmr_test_expression(stack), c->written_out);
  cmr_resource_ref leaf;
  ck_assert_ok(cmr_stack_leaf(stack, &leaf));
  const char *name = NULL;
  ck_assert_ok(cmr_ref_type_name(leaf, &name));
  ck_assert_str_eq(name, "simulated");
  cmr_resource_ref top;
  ck_assert_ok(cmr_stack_ref(stack, &top));
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(top, 1024, CMR_DEFAULT_STREAM, &ptr));
  ck_assert_ok(cmr_deallocate(top, ptr, 1024, CMR_DEFAULT_STREAM));
  ck_assert_ok(cmr_stack_destroy(stack));
}
END_TEST

typedef struct over_bad_case {
  const char *expression;
  const char *leaf;
  cmr_status status;
  const char *message;
} over_bad_case;

static const over_bad_case over_bad[] = {
    /* The leaf that gives way is still read and checked. */
    {"statistics(cuda_async(export_handle_type=ipc))", OVER, CMR_ERROR_INVALID_ARGUMENT,
     "bad value \"ipc\" for export_handle_type"},
    {"statistics(sam_headroom)", OVER, CMR_ERROR_INVALID_ARGUMENT, "sam_headroom needs headroom=..."},
    {"statistics(system(x=1))", OVER, CMR_ERROR_INVALID_ARGUMENT, "system has no parameter \"x\""},
    {"statistics(system) x", OVER, CMR_ERROR_INVALID_ARGUMENT, "unexpected \"x\" after the expression"},
    /* The leaf itself: one resource that takes no upstream. */
    {"statistics(system)", "pool(system)", CMR_ERROR_INVALID_ARGUMENT,
     "cmr_stack_parse_over: the leaf: cmr_stack_parse: column 1 (at \"pool(system)\"): pool takes an upstream"},
    {"statistics(system)", "simulatd", CMR_ERROR_INVALID_ARGUMENT,
     "the leaf: cmr_stack_parse: column 1 (at "
     "\"simulatd\"): unknown resource \"simulatd\""},
    {"statistics(system)", "", CMR_ERROR_INVALID_ARGUMENT, "expected the name of a resource that takes no upstream"},
    {"statistics(system)", "simulated(capacity=lots)", CMR_ERROR_INVALID_ARGUMENT,
     "the leaf: cmr_stack_parse: column 20 (at \"lots)\"): bad value \"lots\" for capacity"},
    {"statistics(system)", "simulated simulated", CMR_ERROR_INVALID_ARGUMENT,
     "unexpected \"simulated\" after the leaf"},
    {"statistics(system)", NULL, CMR_ERROR_NULL_POINTER, "cmr_stack_parse_over: leaf is NULL"},
    {NULL, OVER, CMR_ERROR_NULL_POINTER, "cmr_stack_parse_over: expression is NULL"},
};

START_TEST(a_bad_leaf_or_expression_over_a_leaf_is_refused) {
  const over_bad_case *c = &over_bad[_i];
  cmr_stack *stack = (cmr_stack *)1;
  ck_assert_status(cmr_stack_parse_over(c->expression, c->leaf, &stack), c->status);
  ck_assert_ptr_null(stack);
  ck_assert_msg(strstr(cmr_last_error_message(), c->message) != NULL, "\"%s\" over \"%s\": message \"%s\" lacks \"%s\"",
                c->expression ? c->expression : "(null)", c->leaf ? c->leaf : "(null)", cmr_last_error_message(),
                c->message);
}
END_TEST

START_TEST(parse_over_refuses_a_null_out) {
  ck_assert_status(cmr_stack_parse_over("system", OVER, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("cmr_stack_parse_over: out is NULL");
  ck_assert_status(cmr_stack_parse_over("system", NULL, NULL), CMR_ERROR_NULL_POINTER);
}
END_TEST

/* ---- long values: the value is cut, never the name or the reason ---- */

enum { long_value_length = 2000 };

typedef struct long_case {
  const char *format; /* the expression, %s standing for the long value */
  const char *value;  /* "x", "9", "a", ...: repeated to the long value */
  const char *reason; /* what the message must still say, after the cut value */
  bool overflow;      /* CMR_ERROR_SIZE_OVERFLOW, not CMR_ERROR_INVALID_ARGUMENT */
} long_case;

static const long_case long_cases[] = {
    {"binning(system, min_size_exponent=%s)", "7", "\" for min_size_exponent: expected an integer ([-]digits, from",
     false},
    {"pool(system, initial_pool_size=%s)", "9", "\" for initial_pool_size: it is more bytes than a size_t holds", true},
    {"pool(system, initial_pool_size=1%s)", "Q", "\" for initial_pool_size: what follows the number is not a unit",
     false},
    {"arena(system, dump_log_on_failure=%s)", "y", "\" for dump_log_on_failure: expected true or false", false},
    {"cuda_async(export_handle_type=%s)", "i",
     "\" for export_handle_type: expected none, posix_file_descriptor, fabric", false},
    {"callback(properties=%s)", "d", "\" for properties: expected device_accessible, host_accessible", false},
    {"%s(system)", "p", "\" (known: aligned, arena, ", false},
    {"pool(system, %s=1)", "p", "\" (its parameters: upstream, initial_pool_size", false},
    {"pool(system) %s", "x", "\" after the expression", false},
    {"logging(system, filename=\"/nonexistent-cmr-dir/%s\")", "f", "\" cannot be opened for writing: ", false},
    {"arena(system, arena_size=1MiB, dump_path=\"/nonexistent-cmr-dir/%s\")", "f",
     "\" cannot be opened for appending: ", false},
};

START_TEST(a_long_value_is_cut_and_the_reason_kept) {
  const long_case *c = &long_cases[_i];
  char value[long_value_length + 1];
  for (int i = 0; i < long_value_length; ++i) value[i] = c->value[0];
  value[long_value_length] = '\0';
  char expression[long_value_length + 128];
  snprintf(expression, sizeof expression, c->format, value);
  cmr_stack *stack = (cmr_stack *)1;
  ck_assert_status(cmr_stack_parse(expression, &stack),
                   c->overflow ? CMR_ERROR_SIZE_OVERFLOW : CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_null(stack);
  const char *message = cmr_last_error_message();
  ck_assert_msg(strstr(message, c->reason) != NULL, "\"%.60s...\": message \"%s\" lacks \"%s\"", expression, message,
                c->reason);
  char cut[16];
  snprintf(cut, sizeof cut, "%c%c%c...\"", c->value[0], c->value[0], c->value[0]);
  ck_assert_msg(strstr(message, cut) != NULL, "message \"%s\" does not show the value cut", message);
  ck_assert_uint_lt(strlen(message), 700);
}
END_TEST

/* ints take C's whole range, and nothing past it. */
START_TEST(ints_take_the_whole_int_range) {
  static const char *const accepted[] = {"-2147483648", "2147483647"};
  static const char *const refused[] = {"-2147483649", "2147483648"};
  char expression[128];
  for (int i = 0; i < 2; ++i) {
    snprintf(expression, sizeof expression, "binning(system, min_size_exponent=%s, max_size_exponent=%s)", accepted[i],
             accepted[i]);
    /* Past the parser, the constructor has its own say about such exponents. */
    cmr_stack *stack = NULL;
    if (cmr_stack_parse(expression, &stack) == CMR_SUCCESS) {
      ck_assert_ok(cmr_stack_destroy(stack));
    } else {
      ck_assert_message_has("making binning: cmr_binning_resource_create: ");
      char given[64];
      snprintf(given, sizeof given, "min_size_exponent %s", accepted[i]);
      ck_assert_message_has(given);
    }
    snprintf(expression, sizeof expression, "binning(system, min_size_exponent=%s)", refused[i]);
    cmr_test_stack_refused(expression, CMR_ERROR_INVALID_ARGUMENT,
                           "expected an integer ([-]digits, from -2147483648 to 2147483647)");
  }
}
END_TEST

/* ---- the size grammar, by the table every binding reads (tests/sizes.txt) ---- */

enum { size_case_max = 128 };

typedef struct table_case {
  char text[80];
  char expected[32]; /* bytes, "invalid" or "overflow" */
} table_case;

static table_case table[size_case_max];
static int table_count;

/* "<expected> <text>" lines, \t in the text a tab; # starts a comment. */
static void read_size_table(void) {
  table_count = 0; /* read afresh by each test (one process runs them all under CK_FORK=no) */
  FILE *file = fopen(CMR_SIZES_TABLE, "r");
  ck_assert_msg(file != NULL, "cannot open %s", CMR_SIZES_TABLE);
  char line[160];
  while (fgets(line, sizeof line, file) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0') continue;
    ck_assert_int_lt(table_count, size_case_max);
    table_case *c = &table[table_count++];
    char *space = strchr(line, ' ');
    ck_assert_ptr_nonnull(space);
    snprintf(c->expected, sizeof c->expected, "%.*s", (int)(space - line), line);
    size_t out = 0;
    for (const char *in = space + 1; *in != '\0'; ++in) {
      bool tab = in[0] == '\\' && in[1] == 't';
      c->text[out++] = tab ? '\t' : *in;
      in += tab;
    }
    c->text[out] = '\0';
  }
  fclose(file);
}

static cmr_status expected_status(const table_case *c) {
  return strcmp(c->expected, "invalid") == 0    ? CMR_ERROR_INVALID_ARGUMENT
         : strcmp(c->expected, "overflow") == 0 ? CMR_ERROR_SIZE_OVERFLOW
                                                : CMR_SUCCESS;
}

START_TEST(the_size_table_is_read_as_written) {
  read_size_table();
  ck_assert_int_gt(table_count, 60);
  for (int i = 0; i < table_count; ++i) {
    const table_case *c = &table[i];
    size_t bytes = 1;
    cmr_status status = cmr_parse_size(c->text, &bytes);
    ck_assert_msg(status == expected_status(c), "\"%s\": %s, expected %s (%s)", c->text, cmr_status_string(status),
                  c->expected, cmr_last_error_message());
    if (status == CMR_SUCCESS) {
      ck_assert_msg(bytes == strtoull(c->expected, NULL, 10), "\"%s\" read as %zu, not %s", c->text, bytes,
                    c->expected);
    } else {
      ck_assert_uint_eq(bytes, 0);
      ck_assert_message_has("cmr_parse_size: Could not parse \"");
      ck_assert_message_has("\" as a byte specification: ");
    }
  }
}
END_TEST

/* A stack expression reads its sizes by the same grammar, with the same
 * status (limiting's allocation_limit takes any size but SIZE_MAX, the
 * "default" of C); sizes_in_every_unit checks values read there. */
START_TEST(stack_expressions_read_sizes_by_the_same_table) {
  read_size_table();
  for (int i = 0; i < table_count; ++i) {
    const table_case *c = &table[i];
    size_t length = strlen(c->text);
    /* blanks around a value belong to the expression, and a comma ends it */
    if (length > 0 && (isblank((unsigned char)c->text[0]) || isblank((unsigned char)c->text[length - 1]))) continue;
    if (strchr(c->text, ',') != NULL || strcmp(c->expected, "18446744073709551615") == 0) continue;
    char expression[160];
    snprintf(expression, sizeof expression, "limiting(system, allocation_limit=%.80s)", c->text);
    cmr_stack *stack = NULL;
    cmr_status status = cmr_stack_parse(expression, &stack);
    cmr_status expected = expected_status(c);
    ck_assert_msg(status == expected, "\"%s\": %s (%s)", expression, cmr_status_string(status),
                  cmr_last_error_message());
    if (status != CMR_SUCCESS) {
      ck_assert_message_has("for allocation_limit: ");
    } else {
      ck_assert_ok(cmr_stack_destroy(stack));
    }
  }
}
END_TEST

START_TEST(a_percentage_is_read_at_parse_time) {
  size_t half = 0, parsed = 0;
  ck_assert_ok(cmr_percent_of_free_device_memory(50, &half));
  ck_assert_ok(cmr_parse_size("50%", &parsed));
  ck_assert_msg(parsed >= half - half / 10 && parsed <= half + half / 10, "50%% read as %zu, about %zu expected",
                parsed, half);
  ck_assert_uint_eq(parsed % 256, 0);
}
END_TEST

START_TEST(parse_size_refuses_null) {
  size_t bytes = 1;
  ck_assert_status(cmr_parse_size(NULL, &bytes), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("cmr_parse_size: text is NULL");
  ck_assert_uint_eq(bytes, 0);
  ck_assert_status(cmr_parse_size("1", NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_message_has("cmr_parse_size: out is NULL");
}
END_TEST

START_TEST(nesting_is_bounded) {
  char expression[40 * 12 + 16] = "";
  for (int i = 0; i < 40; ++i) strcat(expression, "pool(");
  strcat(expression, "system");
  for (int i = 0; i < 40; ++i) strcat(expression, ")");
  cmr_test_stack_refused(expression, CMR_ERROR_INVALID_ARGUMENT, "nested more than 32 deep");
}
END_TEST

START_TEST(creation_errors_keep_their_status_and_say_where) {
  cmr_test_stack_refused(
      "pool(system, initial_pool_size=1000)", CMR_ERROR_INVALID_ARGUMENT,
      "column 1: making pool: cmr_pool_resource_create: initial_pool_size 1000 is not a multiple of 256");
  cmr_test_stack_refused("binning(pool(system, initial_pool_size=2MiB, maximum_pool_size=1MiB))",
                         CMR_ERROR_INVALID_ARGUMENT, "column 9: making pool");
  cmr_test_stack_refused("pool(system, initial_pool_size=1000TB)", CMR_ERROR_OUT_OF_MEMORY, "making pool");
  cmr_test_stack_refused("pool(system, initial_pool_size=20000000TB)", CMR_ERROR_SIZE_OVERFLOW,
                         "bad value \"20000000TB\" for initial_pool_size: it is more bytes than a size_t holds");
}
END_TEST

START_TEST(null_arguments) {
  cmr_stack *stack = NULL;
  ck_assert_status(cmr_stack_parse(NULL, &stack), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_stack_parse("system", NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_ok(cmr_stack_destroy(NULL)); /* a no-op, as free(NULL) */
  cmr_resource_ref ref;
  ck_assert_status(cmr_stack_ref(NULL, &ref), CMR_ERROR_NULL_POINTER);
  stack = cmr_test_stack("system", NULL);
  ck_assert_status(cmr_stack_ref(stack, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_status(cmr_stack_expression(stack, NULL), CMR_ERROR_NULL_POINTER);
  ck_assert_ok(cmr_stack_destroy(stack));
}
END_TEST

/* Check runs each test in a child process, so the table is fresh here. */
START_TEST(cmr_resource_sets_the_default_resource) {
  ck_assert_int_eq(setenv("CMR_RESOURCE", "pool(system, initial_pool_size=2MiB)", 1), 0);
  cmr_resource_ref ref;
  ck_assert_ok(cmr_get_current_device_resource_ref(&ref));
  const char *name = NULL;
  ck_assert_ok(cmr_ref_type_name(ref, &name));
  ck_assert_str_eq(name, "pool");
  cmr_pool_resource *pool = NULL;
  ck_assert_ok(cmr_pool_resource_from_ref(ref, &pool));
  size_t size = 0;
  ck_assert_ok(cmr_pool_resource_pool_size(pool, &size));
  ck_assert_uint_eq(size, 2 << 20);
  ck_assert_ok(cmr_pool_resource_destroy(pool));
  ck_assert_ok(cmr_reset_current_device_resource_ref());
}
END_TEST

START_TEST(a_bad_cmr_resource_is_reported_by_the_table) {
  ck_assert_int_eq(setenv("CMR_RESOURCE", "pool(sytem)", 1), 0);
  cmr_resource_ref ref;
  ck_assert_status(cmr_get_current_device_resource_ref(&ref), CMR_ERROR_INVALID_ARGUMENT);
  ck_assert_message_has("CMR_RESOURCE=\"pool(sytem)\"");
  ck_assert_message_has("unknown resource \"sytem\"");
}
END_TEST

static void stack_cases(Suite *suite) {
  TCase *tc = tcase_create("stack");
  tcase_add_test(tc, a_stack_builds_and_serves);
  tcase_add_test(tc, the_written_out_expression_has_every_default_and_parses_back);
  tcase_add_test(tc, the_top_outlives_the_stack_when_retained);
  tcase_add_loop_test(tc, sizes_in_every_unit, 0, (int)(sizeof sizes / sizeof sizes[0]));
  tcase_add_test(tc, a_percentage_is_of_free_device_memory);
  tcase_add_test(tc, named_defaults_ints_bools_and_strings);
  tcase_add_loop_test(tc, bad_expressions_say_where_and_what, 0, (int)(sizeof bad / sizeof bad[0]));
  tcase_add_loop_test(tc, a_long_value_is_cut_and_the_reason_kept, 0, (int)(sizeof long_cases / sizeof long_cases[0]));
  tcase_add_test(tc, ints_take_the_whole_int_range);
  tcase_add_loop_test(tc, the_leaf_gives_way_wherever_it_is_written, 0,
                      (int)(sizeof over_cases / sizeof over_cases[0]));
  tcase_add_loop_test(tc, a_bad_leaf_or_expression_over_a_leaf_is_refused, 0,
                      (int)(sizeof over_bad / sizeof over_bad[0]));
  tcase_add_test(tc, parse_over_refuses_a_null_out);
  tcase_add_test(tc, the_size_table_is_read_as_written);
  tcase_add_test(tc, stack_expressions_read_sizes_by_the_same_table);
  tcase_add_test(tc, a_percentage_is_read_at_parse_time);
  tcase_add_test(tc, parse_size_refuses_null);
  tcase_add_test(tc, nesting_is_bounded);
  tcase_add_test(tc, creation_errors_keep_their_status_and_say_where);
  tcase_add_test(tc, null_arguments);
  tcase_add_test(tc, cmr_resource_sets_the_default_resource);
  tcase_add_test(tc, a_bad_cmr_resource_is_reported_by_the_table);
  suite_add_tcase(suite, tc);
}

/* The suite needs a device: sizes in percent, the per-device table. */
int main(void) { return cmr_test_main_suite("stack", CMR_TEST_NEEDS_DEVICE, stack_cases); }
