# SPDX-License-Identifier: Apache-2.0
# Cython declarations of <cmr/stack.h>: sizes as text and resource stacks from expressions.

from cmr.libcmr.core cimport cmr_resource_ref, cmr_status


cdef extern from "cmr/cmr.h" nogil:
    ctypedef struct cmr_stack:
        pass

    cmr_status cmr_parse_size(const char *text, size_t *out)
    cmr_status cmr_stack_parse(const char *expression, cmr_stack **out)
    cmr_status cmr_stack_parse_over(const char *expression, const char *leaf, cmr_stack **out)
    cmr_status cmr_stack_destroy(cmr_stack *stack)
    cmr_status cmr_stack_ref(const cmr_stack *stack, cmr_resource_ref *out)
    cmr_status cmr_stack_leaf(const cmr_stack *stack, cmr_resource_ref *out)
    cmr_status cmr_stack_expression(const cmr_stack *stack, const char **out)
