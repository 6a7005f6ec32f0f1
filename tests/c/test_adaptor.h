/* SPDX-License-Identifier: Apache-2.0 */
/* What every adaptor's suite checks the same way: that it passes a call to
 * its upstream unchanged. */
#ifndef CMR_TEST_ADAPTOR_H
#define CMR_TEST_ADAPTOR_H

#include "test_util.h"

/* An allocation and its free through `adaptor` on `stream` reach
 * `upstream` (a fresh, host-accessible foreign resource under it) once
 * each, with the bytes, the effective alignment and the stream asked for;
 * the memory is writable and nothing stays outstanding. The foreign
 * resource only records the stream: an adaptor that leaves it alone can be
 * given a made-up one (test_adaptor_recorded_stream), which is seen to
 * pass through unchanged; one that asks the driver about it needs a real one. */
void test_adaptor_forwards(cmr_resource_ref adaptor, const test_foreign *upstream, cmr_stream stream);
#define test_adaptor_recorded_stream ((cmr_stream)(uintptr_t)0x5678)

/* For max_alignment = "upstream": an alignment larger than the default
 * (4096) reaches `upstream` as asked, both ways, which honours it here (it
 * would refuse what it cannot), and the memory is so aligned. */
void test_adaptor_passes_alignment_up(cmr_resource_ref adaptor, const test_foreign *upstream);

/* Makes an adaptor over `upstream`; the ref carries the creator's share. */
typedef cmr_status (*test_adaptor_make)(cmr_resource_ref upstream, cmr_resource_ref *out);

/* An adaptor made over a system resource whose handle is then destroyed:
 * the adaptor's share keeps the upstream working, which an allocation
 * written through and freed shows. The caller releases the ref. */
cmr_resource_ref test_adaptor_over_released_system(test_adaptor_make make);

#endif /* CMR_TEST_ADAPTOR_H */
