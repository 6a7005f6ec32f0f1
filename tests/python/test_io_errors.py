# SPDX-License-Identifier: Apache-2.0
"""A file cmr cannot write (CMR_ERROR_IO) raises OSError with cmr's message,
not cmr's RuntimeError: a logging adaptor's log, an arena's dump."""
import pytest

import cmr
from cmr import mr


def test_a_full_disk_under_a_logging_adaptor_is_an_os_error(host_mr):
    logged = mr.LoggingResourceAdaptor(host_mr, log_file_name="/dev/full")
    logged.deallocate(logged.allocate(256), 256)  # a row lost does not fail the call
    with pytest.raises(OSError, match="^CMR_ERROR_IO: logging: 3 rows could not be written to /dev/full: "
                                      "No space left on device$") as raised:
        logged.flush()
    assert not isinstance(raised.value, cmr.RMMError)
    assert logged.lost_rows() == 3
    logged.flush()  # reported once


def test_a_full_disk_under_an_arenas_dump_is_an_os_error(host_mr):
    arena = mr.ArenaMemoryResource(host_mr, arena_size=1 << 20, dump_log_on_failure=True, dump_path="/dev/full")
    with pytest.raises(OSError, match="writing the dump to /dev/full failed: No space left on device"):
        arena.dump()
