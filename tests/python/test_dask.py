# SPDX-License-Identifier: Apache-2.0
"""cmr.dask on a LocalCluster of two worker processes (host build): each
worker's resource is the one configured, and tasks allocate through it."""

import os

import pytest

distributed = pytest.importorskip("distributed", reason="cmr.dask needs distributed (Debian: python3-distributed)")

import cmr  # noqa: E402
import cmr.dask  # noqa: E402
from conftest import CUDA_BUILD  # noqa: E402

pytestmark = pytest.mark.skipif(CUDA_BUILD, reason="the workers' leaf here is host memory (the host build)")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  scheduler_port=0, silence_logs=40) as cluster, distributed.Client(cluster) as client:
        yield client


def allocate_in_task(size):
    """A task: a buffer from the worker's current resource, and what the resource counted."""
    buffer = cmr.DeviceBuffer(size=size)
    counts = cmr.mr.get_current_device_resource().allocation_counts
    del buffer
    return os.getpid(), counts.current_bytes, counts.total_count


def test_each_worker_takes_the_stack_expression_and_tasks_allocate_through_it(client):
    cmr.dask.configure_workers(client, resource="statistics(pool(system, initial_pool_size=1MiB))")
    reported = client.run(cmr.dask.worker_resource)
    assert len(reported) == 2
    assert set(reported.values()) == {"StatisticsResourceAdaptor"}, reported
    workers = list(reported)
    results = [client.submit(allocate_in_task, 1000 + i, workers=[worker], pure=False).result()
               for i, worker in enumerate(workers)]
    pids = {pid for pid, _, _ in results}
    assert len(pids) == 2 and os.getpid() not in pids  # two worker processes, neither this one
    for i, (_, current_bytes, total_count) in enumerate(results):
        assert current_bytes >= 1000 + i and total_count >= 1


def test_a_bad_expression_is_reported_to_the_client(client):
    with pytest.raises(Exception, match="nothing"):
        cmr.dask.configure_workers(client, resource="pool(nothing)")


# Last: it leaves three workers (scaling down races with the next registration).
def test_rmms_reinitialize_arguments_and_workers_that_join_later(client):
    cmr.dask.configure_workers(client, pool_allocator=True, initial_pool_size=2**20)
    assert set(client.run(cmr.dask.worker_resource).values()) == {"PoolMemoryResource"}
    client.cluster.scale(3)
    client.wait_for_workers(3)
    assert set(client.run(cmr.dask.worker_resource).values()) == {"PoolMemoryResource"}
