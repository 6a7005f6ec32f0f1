# SPDX-License-Identifier: Apache-2.0
"""The size grammar through Python: tests/sizes.txt, the table the C suite
reads, through cmr.parse_bytes (which calls the C parser) and a resource's
size argument."""

from pathlib import Path

import pytest

import cmr
from cmr import mr

TABLE = Path(__file__).resolve().parent.parent / "sizes.txt"


def _cases():
    for line in TABLE.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        expected, text = line.split(" ", 1)
        yield text.replace("\\t", "\t"), expected


CASES = list(_cases())


def test_the_table_is_there():
    assert len(CASES) > 60


@pytest.mark.parametrize("text, expected", CASES)
def test_parse_bytes_reads_the_table(text, expected):
    if expected in ("invalid", "overflow"):
        with pytest.raises(ValueError, match="Could not parse" if expected == "invalid" else "more bytes"):
            cmr.parse_bytes(text)
    else:
        assert cmr.parse_bytes(text) == int(expected)


def test_a_percentage_is_of_free_memory():
    assert cmr.parse_bytes("0%") == 0
    assert cmr.parse_bytes("100%") % 256 == 0


def test_ints_pass_and_other_types_do_not():
    assert cmr.parse_bytes(5) == 5
    with pytest.raises(ValueError):
        cmr.parse_bytes(-1)
    with pytest.raises(ValueError):
        cmr.parse_bytes(2**64)
    with pytest.raises(TypeError):
        cmr.parse_bytes(1.5)
    with pytest.raises(TypeError):
        cmr.parse_bytes(True)
    with pytest.raises(ValueError, match="NUL"):
        cmr.parse_bytes("1\0GiB")


def test_resource_arguments_use_the_same_grammar():
    limited = mr.LimitingResourceAdaptor(mr.get_current_device_resource(), allocation_limit="1.5 mib")
    assert limited.get_allocation_limit() == 1572864
    with pytest.raises(ValueError, match="Could not parse"):
        mr.LimitingResourceAdaptor(mr.get_current_device_resource(), allocation_limit="1e3")
