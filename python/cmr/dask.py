# SPDX-License-Identifier: Apache-2.0
"""cmr on a Dask cluster: every worker's resource, set the way Dask-CUDA
sets RMM's.

    from distributed import Client
    import cmr.dask

    client = Client(cluster)
    cmr.dask.configure_workers(client, resource="statistics(pool(cuda, initial_pool_size=1GiB))")

configure_workers registers CmrWorkerPlugin, which calls cmr.reinitialize
in each worker, those running and those that join later, with what it was
given: a stack expression (resource=) or RMM's reinitialize arguments
(pool_allocator=True, initial_pool_size=..., managed_memory=..., devices=...).
Tasks then allocate through it (cmr.DeviceBuffer, cmr.mr's current-device
functions, the CuPy/Numba/PyTorch allocators of cmr.allocators).
Needs the `distributed` package."""

from __future__ import annotations

import typing

from distributed import Client
from distributed.diagnostics.plugin import WorkerPlugin

from ._reinitialize import reinitialize

__all__ = ["CmrWorkerPlugin", "configure_workers", "worker_resource"]


class CmrWorkerPlugin(WorkerPlugin):
    """Calls cmr.reinitialize(**arguments) in each worker as it starts (or
    at once, in those already running)."""

    name = "cmr"

    def __init__(self, **arguments: typing.Any) -> None:
        self.arguments = arguments

    def setup(self, worker: typing.Any) -> None:
        reinitialize(**self.arguments)


def configure_workers(client: Client, **arguments: typing.Any) -> CmrWorkerPlugin:
    """Sets every worker's resource, now and for workers that join later:
    arguments are cmr.reinitialize's (resource="expression", or RMM's).
    A worker that cannot build the resource raises here."""
    plugin = CmrWorkerPlugin(**arguments)
    client.register_worker_plugin(plugin, name=CmrWorkerPlugin.name)
    return plugin


def worker_resource() -> str:
    """What this process allocates from: the current device's resource, by
    its class name (run it on the workers: client.run(worker_resource))."""
    from ._per_device import get_current_device_resource

    return type(get_current_device_resource()).__name__
