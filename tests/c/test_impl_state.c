/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_impl_new / cmr_impl_free (runtime/src/resource_api/impl_state.h), as
 * the generated wrappers make an algorithm's struct: aligned as its layout
 * says, zero past the parameters, the parameters' strings copies of the
 * caller's, freed with the struct (ASan and valgrind see a leak otherwise). */
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "impl_state.h"
#include "test_util.h"

typedef struct toy_params {
  size_t size;
  const char *label;
  const char *path; /* NULL: not copied */
} toy_params;

typedef struct toy_impl {
  toy_params params;
  alignas(128) unsigned char own[200]; /* the algorithm's part, zero-filled */
} toy_impl;

static const cmr_impl_layout toy_layout = {sizeof(toy_impl), alignof(toy_impl)};
static const size_t toy_string_offsets[] = {offsetof(toy_params, label), offsetof(toy_params, path)};
static const cmr_impl_strings toy_strings = {toy_string_offsets, 2};

START_TEST(the_struct_begins_with_the_parameters_and_is_zero_past_them) {
  char label[] = "toy";
  toy_params params = {.size = 4096, .label = label, .path = NULL};
  void *made = NULL;
  ck_assert_int_eq(cmr_impl_new(toy_layout, &params, sizeof params, toy_strings, "toy", &made), CMR_SUCCESS);
  toy_impl *impl = made;
  ck_assert_uint_eq((uintptr_t)impl % alignof(toy_impl), 0);
  ck_assert_uint_eq(impl->params.size, 4096);
  for (size_t i = 0; i < sizeof impl->own; ++i) ck_assert_uint_eq(impl->own[i], 0);
  /* the label is the struct's own copy: the caller's buffer may change or go */
  ck_assert_ptr_ne(impl->params.label, label);
  label[0] = 'b';
  ck_assert_str_eq(impl->params.label, "toy");
  ck_assert_ptr_null(impl->params.path);
  cmr_impl_free(impl, toy_strings);
}
END_TEST

START_TEST(a_struct_without_parameters_is_all_zero) {
  void *made = NULL;
  cmr_impl_strings none = {NULL, 0};
  ck_assert_int_eq(cmr_impl_new(toy_layout, NULL, 0, none, "toy", &made), CMR_SUCCESS);
  const unsigned char *bytes = made;
  for (size_t i = 0; i < sizeof(toy_impl); ++i) ck_assert_uint_eq(bytes[i], 0);
  cmr_impl_free(made, none);
  cmr_impl_free(NULL, none); /* a no-op */
}
END_TEST

START_TEST(a_struct_too_large_for_host_memory_is_refused_with_a_message) {
  toy_params params = {.size = 1, .label = "toy", .path = NULL};
  void *made = &params;
  cmr_impl_layout huge = {SIZE_MAX - 8, 64}; /* its rounding up would wrap */
  ck_assert_int_eq(cmr_impl_new(huge, &params, sizeof params, toy_strings, "toy", &made), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_ptr_eq(made, &params); /* untouched */
  ck_assert_str_eq(cmr_last_error_message(), "toy: no host memory for the resource");
}
END_TEST

int main(void) {
  return cmr_test_main("impl_state", the_struct_begins_with_the_parameters_and_is_zero_past_them,
                       a_struct_without_parameters_is_all_zero,
                       a_struct_too_large_for_host_memory_is_refused_with_a_message);
}
