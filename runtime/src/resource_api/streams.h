/* SPDX-License-Identifier: Apache-2.0 */
/* Streams cmr makes and ends (device.c). */
#ifndef CMR_STREAMS_H
#define CMR_STREAMS_H

#include <cmr/cmr.h>

/* CMR_ERROR_INVALID_ARGUMENT unless `flags` is one of CMR_STREAM_FLAGS_*. */
cmr_status cmr_stream_flags_check(unsigned flags, const char *what);
/* A new stream made with (checked) `flags`, known to cmr as those of
 * cmr_stream_create are; the backend's message on failure. */
cmr_status cmr_stream_make(unsigned flags, cmr_stream *out);
/* Destroys a live stream of cmr_stream_make, once; any other stream is
 * CMR_ERROR_INVALID_ARGUMENT, with "<what>: ..." in the message. */
cmr_status cmr_stream_end(cmr_stream stream, const char *what);

#endif /* CMR_STREAMS_H */
