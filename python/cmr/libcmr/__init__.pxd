# SPDX-License-Identifier: Apache-2.0
# cmr.libcmr: Cython declarations of cmr's C API (see __init__.py).
