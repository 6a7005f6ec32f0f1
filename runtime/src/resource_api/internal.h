/* SPDX-License-Identifier: Apache-2.0 */
/* What the runtime, the generated wrappers and the algorithm files share and
 * no user sees, one header per concern: errors, counted objects, refs,
 * streams, named defaults, the diagnostic log. A file may include just the
 * one it needs; this one gathers them. */
#ifndef CMR_INTERNAL_H
#define CMR_INTERNAL_H

#include "defaults.h"
#include "errors.h"
#include "log_write.h"
#include "object.h"
#include "refs.h"
#include "streams.h"

#endif /* CMR_INTERNAL_H */
