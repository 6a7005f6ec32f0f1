/* SPDX-License-Identifier: Apache-2.0 */
/* Tells every live cmr_stream_lists when a key of its lists ends, so that
 * the list and its free blocks need not wait for the resource's destruction
 * (stream_lists.h says what becomes of them): a thread that keyed the
 * default streams exits (a thread-specific destructor), or a stream is
 * destroyed through cmr_stream_destroy. A stream destroyed behind cmr's
 * back (cudaStreamDestroy) tells no one: its list goes once found empty. */
#ifndef CMR_STREAM_ENDS_H
#define CMR_STREAM_ENDS_H

#include "stream_lists.h"

/* Each stream_lists is tracked from its creation to its destruction, so a
 * thread ending or a stream being destroyed never reaches a destroyed one:
 * untracking waits for a notification in progress. */
cmr_status cmr_stream_ends_track(cmr_stream_lists *lists);
void cmr_stream_ends_untrack(cmr_stream_lists *lists);

/* Threads' keys have the top bit set, which no stream id (a small counter)
 * or host token (a user-space address) has. */
#define CMR_THREAD_KEY_BIT (UINT64_C(1) << 63)

/* The calling thread's key for the default streams (0 until the first
 * cmr_stream_ends_thread_key), read on the path of every operation there. */
extern CMR_HOT_THREAD_LOCAL uint64_t cmr_thread_key;
/* Draws the calling thread's key (never reused) and arranges for every
 * tracked stream_lists to hear of it when the thread exits. */
uint64_t cmr_stream_ends_thread_key(void);

/* `stream` (one cmr_stream_create made) is about to be destroyed. */
void cmr_stream_ends_stream(cmr_stream stream);

/* List records held by all tracked stream_lists together, spare ones
 * included (tests: bookkeeping stays bounded). */
size_t cmr_stream_ends_list_records(void);

#endif /* CMR_STREAM_ENDS_H */
