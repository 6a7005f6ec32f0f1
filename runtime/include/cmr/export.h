/* SPDX-License-Identifier: Apache-2.0 */
/* Symbol visibility for the cmr library. The shared library is built with
 * hidden visibility; CMR_API marks what it exports. */
#ifndef CMR_EXPORT_H
#define CMR_EXPORT_H

#if defined(_WIN32)
#if defined(CMR_BUILDING_SHARED)
#define CMR_API __declspec(dllexport)
#elif defined(CMR_STATIC)
#define CMR_API
#else
#define CMR_API __declspec(dllimport)
#endif
#else
#define CMR_API __attribute__((visibility("default")))
#endif

#endif /* CMR_EXPORT_H */
