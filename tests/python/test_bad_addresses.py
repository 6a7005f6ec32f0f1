# SPDX-License-Identifier: Apache-2.0
"""Addresses a caller makes up: DeviceBuffer(ptr=...), copy_from_device
with a fake __cuda_array_interface__ and pylibrmm's copy functions refuse
an address that is not memory (ValueError) instead of crashing the
interpreter. Each case runs in a child interpreter, so that a crash is
reported as one, with the others still run."""

import subprocess
import sys
import textwrap

import cmr

PRELUDE = textwrap.dedent("""
    import ctypes, gc, mmap
    import cmr
    from cmr import mr
    from cmr.pylibrmm import device_buffer as pdb
    stats = mr.StatisticsResourceAdaptor(mr.SystemMemoryResource())
    mr.set_current_device_resource(stats)

    def refused(call, words="no page is mapped there"):
        try:
            call()
        except ValueError as error:
            assert words in str(error), str(error)
        else:
            raise AssertionError("not refused")

    class Fake:
        def __init__(self, ptr, nbytes):
            self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (nbytes,), "strides": None,
                                             "typestr": "|u1", "version": 3}
""")


def run_child(body: str) -> None:
    """Runs PRELUDE + body in a new interpreter; it must end normally and print "done"."""
    child = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body) + "\nprint('done')"],
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == 0 and child.stdout.strip().endswith("done"), (
        f"the child ended with {child.returncode}:\n{child.stdout}\n{child.stderr}")


def test_a_buffer_from_an_address_that_is_not_memory_is_refused():
    run_child("""
        refused(lambda: cmr.DeviceBuffer(ptr=16, size=8))
        refused(lambda: cmr.DeviceBuffer(ptr=16, size=8, mr=mr.SystemMemoryResource()))
        refused(lambda: cmr.DeviceBuffer(ptr=2**64 - 8, size=16))  # runs off the end of the address space
        gc.collect()
        assert stats.allocation_counts.current_bytes == 0  # the buffer made for the copy went again
        host = ctypes.create_string_buffer(b"real bytes", 10)
        assert cmr.DeviceBuffer(ptr=ctypes.addressof(host), size=10).tobytes() == b"real bytes"
    """)


def test_copy_from_device_refuses_a_fake_interface():
    run_child("""
        target = cmr.DeviceBuffer(size=64)
        refused(lambda: target.copy_from_device(Fake(16, 8)))
        refused(lambda: target.copy_from_device(Fake(0x7, 64)))
        source = cmr.DeviceBuffer.to_device(b"device bytes")
        target.copy_from_device(Fake(source.ptr, source.size))
        assert target.tobytes()[:12] == b"device bytes"
    """)


def test_the_copy_functions_refuse_addresses_that_are_not_memory():
    run_child("""
        buffer = cmr.DeviceBuffer.to_device(b"12345678")
        refused(lambda: pdb.copy_ptr_to_host(16, bytearray(8)))
        refused(lambda: pdb.copy_host_to_ptr(b"x" * 8, 16))
        refused(lambda: pdb.copy_device_to_ptr(16, buffer.ptr, 8))
        refused(lambda: pdb.copy_device_to_ptr(buffer.ptr, 16, 8))
        refused(lambda: buffer.copy_from_device(Fake(24, 8)))
        assert buffer.tobytes() == b"12345678"  # nothing was written
    """)


def test_a_hole_in_the_middle_of_a_range_is_found():
    run_child("""
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        page = mmap.PAGESIZE
        start = libc.mmap(None, 3 * page, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                          -1, 0)
        assert start not in (None, ctypes.c_void_p(-1).value)
        assert libc.munmap(start + page, page) == 0  # the middle page goes
        refused(lambda: cmr.DeviceBuffer(ptr=start, size=3 * page))
        refused(lambda: cmr.DeviceBuffer(ptr=start + page - 1, size=2))
        assert cmr.DeviceBuffer(ptr=start, size=page).size == page  # the first page alone is memory
        assert cmr.DeviceBuffer(ptr=start + 2 * page, size=page).size == page
        libc.munmap(start, page), libc.munmap(start + 2 * page, page)
    """)


def test_what_cannot_be_checked_is_said():
    doc = cmr.DeviceBuffer.__doc__
    assert "checked before it is" in doc and "past the" in doc and "undefined" in doc
    assert "nothing else in the package lets a Python caller crash it" not in cmr.__doc__
