/* SPDX-License-Identifier: Apache-2.0 */
/* The host build's simulation of stream capture (backend.h), as the host
 * backend's ordering calls see it (host_capture.c). */
#ifndef CMR_HOST_CAPTURE_H
#define CMR_HOST_CAPTURE_H

#include "backend.h"

/* What a call that capture forbids touches. */
typedef enum cmr_host_capture_scope {
  CMR_HOST_CAPTURE_STREAM, /* work of `stream`: forbidden while it is marked capturing */
  CMR_HOST_CAPTURE_ANY     /* all work (the device, an event's stream): forbidden while any stream is marked */
} cmr_host_capture_scope;

/* CMR_ERROR_STREAM_CAPTURE, counted, with a message naming `call`, when the
 * call is forbidden now; else CMR_SUCCESS. One atomic load while no stream
 * is marked. */
cmr_status cmr_host_capture_forbids(cmr_host_capture_scope scope, cmr_stream stream, const char *call);

/* The id of the capture under way on `stream` (cudaStreamGetCaptureInfo's:
 * each marking of a stream draws a new one), or 0 when it is not marked. */
uint64_t cmr_host_capture_sequence(cmr_stream stream);

#endif /* CMR_HOST_CAPTURE_H */
