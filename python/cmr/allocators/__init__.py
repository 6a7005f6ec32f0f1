# SPDX-License-Identifier: Apache-2.0
"""Allocators that route other libraries' device memory through cmr's
current device resource: cmr.allocators.cupy, .numba and .torch, each
imported on its own (it needs its library)."""
