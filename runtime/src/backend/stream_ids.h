/* SPDX-License-Identifier: Apache-2.0 */
/* The ids of the streams cmr_stream_create made, found by handle without a
 * driver call. Every allocation and free on a made stream needs the
 * stream's id (its handle may be recycled once the stream is destroyed), and
 * cudaStreamGetId costs about as much as a pool's whole allocation. A
 * stream's handle is here from its creation to its destruction through
 * cmr_stream_destroy, so a later stream that reuses the handle is never
 * given the old id. Streams made elsewhere, and made ones that did not fit
 * the table, are not here: the backend asks the driver for those.
 * Thread-safe; finding takes no lock. */
#ifndef CMR_STREAM_IDS_H
#define CMR_STREAM_IDS_H

#include <stdbool.h>
#include <stdint.h>

#include <cmr/core.h>

/* Remembers `stream`'s id; a full neighbourhood of the table leaves it out. */
void cmr_stream_ids_add(cmr_stream stream, uint64_t id);
/* Forgets `stream` (before the stream is destroyed). */
void cmr_stream_ids_remove(cmr_stream stream);
/* Whether `stream` is here, with its id in *id. */
bool cmr_stream_ids_find(cmr_stream stream, uint64_t *id);

#endif /* CMR_STREAM_IDS_H */
