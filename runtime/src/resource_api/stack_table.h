/* SPDX-License-Identifier: Apache-2.0 */
/* What the stack-expression parser (stack.c) knows of each resource: its
 * constructor's parameters and a function that calls the constructor with
 * parsed values. generated/src/stack_table.c holds the table, from spec/. */
#ifndef CMR_STACK_TABLE_H
#define CMR_STACK_TABLE_H

#include "internal.h"

typedef enum cmr_stack_type {
  CMR_STACK_SIZE, /* size_t: 1GiB, 512KB, 4096, 80% */
  CMR_STACK_INT,
  CMR_STACK_BOOL, /* true, false */
  CMR_STACK_DOUBLE,
  CMR_STACK_STRING,     /* "quoted" */
  CMR_STACK_ENUM,       /* one of the parameter's value names */
  CMR_STACK_PROPERTIES, /* device_accessible|host_accessible, or none */
  CMR_STACK_RESOURCE,   /* an expression */
  CMR_STACK_UNWRITABLE  /* pointers and callbacks: only their defaults */
} cmr_stack_type;

/* A size or int is optional (core.h): "not set" asks the constructor for
 * the default; a required one reads only .value. */
typedef union cmr_stack_value {
  cmr_optional_size size;
  cmr_optional_int integer;
  bool boolean;
  double real;
  const char *string;
  int enumeration; /* the index of the value name, as the enum constant */
  unsigned properties;
  cmr_resource_ref ref;
  void *pointer;
  void (*function)(void);
} cmr_stack_value;

typedef struct cmr_stack_param {
  const char *name;
  cmr_stack_type type;
  const char *const *values; /* an enum's value names */
  size_t value_count;
  /* How the default reads in an expression (a literal, or a named default
   * such as half_of_free_device_memory), NULL when the parameter is
   * required; and the value that asks the constructor for it. */
  const char *default_text;
  cmr_stack_value default_value;
} cmr_stack_param;

typedef struct cmr_stack_resource {
  const char *name;
  const cmr_stack_param *params;
  size_t param_count;
  /* Calls the constructor with one value per parameter; *out is the new
   * resource's ref, carrying the creator's share. */
  cmr_status (*make)(const cmr_stack_value *values, cmr_resource_ref *out);
} cmr_stack_resource;

extern const cmr_stack_resource cmr_stack_resources[];
extern const size_t cmr_stack_resource_count;

#endif /* CMR_STACK_TABLE_H */
