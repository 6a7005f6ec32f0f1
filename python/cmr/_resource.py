# SPDX-License-Identifier: Apache-2.0
"""The base classes of cmr.mr: RMM's DeviceMemoryResource and
UpstreamResourceAdaptor, over a cmr_resource_ref.

Every resource object holds one share of its C resource (its own handle,
made by the class, or a share it retained of a resource made elsewhere) and
drops it when it is collected. The C resources retain what they hold
(upstreams, bins, buffers' resources), so the order in which Python
collects them does not matter; the Python objects also keep each other
(upstream_mr, bin_mrs, a buffer's mr), as RMM's do, so that what Python
callbacks a resource calls stay alive as long as anything can call them.

allocate/deallocate, and the resource's ref, are the extension's
(capi.ResourceBase, python/swig/fast_resource.swg): they are called per
allocation. They remember what they handed out, so that freeing an address
twice, an address never allocated (by this resource), or with another size,
raises ValueError before it reaches C, where some upstreams (the system's
free) could not tell."""

from __future__ import annotations

from . import _capi as capi


class DeviceMemoryResource(capi._capi_c.ResourceBase):
    """A memory resource: allocate and deallocate device memory, stream-ordered.

    Not made directly: use one of the classes of cmr.mr. `_ref` (the
    cmr_resource_ref) and `_identity` (its resource's, the key of what
    allocate() handed out) are the base's."""

    _handle = None
    _destroy = None

    def __init__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} cannot be made directly: use a concrete class of cmr.mr")

    def _own(self, handle, make_ref, destroy) -> None:
        """Takes ownership of a new handle."""
        self._handle = handle
        self._destroy = destroy
        self._ref = make_ref(handle)

    def __del__(self):
        handle, self._handle = self._handle, None
        if handle is not None and self._destroy is not None:
            self._destroy(handle)

    @property
    def c_ref(self) -> int:
        """The address of the resource's cmr_resource_ref (valid while this
        object lives), for C and Cython: cmr.libcmr.core.resource_ref_of."""
        return int(self._ref.this)

    @property
    def c_handle(self) -> int:
        """The resource's owning C handle as an int (0 for an object holding
        a share of a resource made elsewhere): what the typed
        cmr_<name>_resource_* functions take."""
        return 0 if self._handle is None else int(self._handle)

    @property
    def ref(self):
        """The cmr_resource_ref of the resource (valid while this object lives)."""
        return self._ref

    def is_equal(self, other: "DeviceMemoryResource") -> bool:
        """Whether memory from one can be freed by the other."""
        return capi.cmr_ref_equal(self._ref, _ref_of(other, "other"))

    @property
    def type_name(self) -> str:
        """The resource's kind, as the spec names it ("pool", "cuda", ...)."""
        return capi.cmr_ref_type_name(self._ref)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.type_name} at {self._identity:#x}>"


class UpstreamResourceAdaptor(DeviceMemoryResource):
    """A resource over another one, its upstream_mr."""

    upstream_mr = None

    def get_upstream(self) -> DeviceMemoryResource | None:
        """The upstream resource (None for an adaptor cmr made outside Python)."""
        return self.upstream_mr


def _ref_of(mr, name: str):
    if not isinstance(mr, DeviceMemoryResource) or mr._ref is None:
        raise TypeError(f"{name} must be a cmr.mr.DeviceMemoryResource, not {type(mr).__name__}")
    return mr._ref
