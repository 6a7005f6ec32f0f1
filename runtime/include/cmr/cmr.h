/* SPDX-License-Identifier: Apache-2.0 */
/* The umbrella header of cmr: include this one. */
#ifndef CMR_CMR_H
#define CMR_CMR_H

#include <cmr/core.h>
#include <cmr/device_buffer.h>
#include <cmr/history.h>
#include <cmr/ipc.h>
#include <cmr/log.h>
#include <cmr/pluggable.h> /* ssize_t comes from <sys/types.h> (POSIX) */
#include <cmr/resources.h>
#include <cmr/stack.h>
#include <cmr/stats.h>
#include <cmr/stream_pool.h>

#endif /* CMR_CMR_H */
