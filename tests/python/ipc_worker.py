# SPDX-License-Identifier: Apache-2.0
"""What test_ipc.py's child processes run (a module of its own, so that
multiprocessing's spawn finds it by name). Each returns its findings
through `conn` rather than asserting: the parent asserts."""

import os

import cmr


def use_descriptor_fds(descriptor, conn):
    """Writes into the file descriptors the descriptor brought (pipes in the tests) and sends its data back."""
    os.write(descriptor.fd, b"through the pool's descriptor")
    os.write(descriptor.records_fd, b"through the records' descriptor")
    conn.send((descriptor.size, descriptor._data))
    descriptor.close()


def read_then_write(descriptor, conn):
    """Imports the buffer, sends back what it holds, overwrites it with 0xa5 and frees the import."""
    try:
        buffer = cmr.ipc.import_buffer(descriptor)
        seen = buffer.tobytes()
        buffer.copy_from_host(b"\xa5" * buffer.size)
        del buffer
        descriptor.close()
        conn.send(("ok", seen))
    except cmr.CmrError as error:
        conn.send(("error", error.errcode, str(error)))


def try_import(descriptor, conn):
    """Imports the buffer and reports the status it failed with (or "ok")."""
    try:
        buffer = cmr.ipc.import_buffer(descriptor)
        del buffer
        conn.send(("ok",))
    except cmr.CmrError as error:
        conn.send(("error", error.errcode, str(error)))


def import_two(first, second, conn):
    """Imports two buffers of one pool and reports whether they share the import, and their first bytes."""
    try:
        a = cmr.ipc.import_buffer(first)
        b = cmr.ipc.import_buffer(second)
        conn.send(("ok", a.mr is b.mr, a.tobytes()[:4], b.tobytes()[:4]))
    except cmr.CmrError as error:
        conn.send(("error", error.errcode, str(error)))


def import_when_told(descriptor, conn):
    """Imports the pool, says so, and once the parent's word comes imports
    the buffer, reporting the status it failed with (or "ok")."""
    try:
        pool = cmr.ipc.ImportedPool(descriptor.fd, descriptor.records_fd)
        conn.send("pool imported")
        conn.recv()
        buffer = pool.import_buffer(descriptor)
        del buffer
        conn.send(("ok",))
    except cmr.CmrError as error:
        conn.send(("error", error.errcode, str(error)))
