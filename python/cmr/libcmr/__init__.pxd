# cmr.libcmr: Cython declarations of cmr's C API (see __init__.py).
