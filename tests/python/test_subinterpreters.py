# SPDX-License-Identifier: Apache-2.0
"""A subinterpreter's `import cmr` is refused with an ImportError that says
why (the extension's hooks are one per process, the main interpreter's),
before it registers anything: the main interpreter's errors, stream
arguments and DeviceBuffers keep working after the subinterpreter is gone,
whichever of the two imported cmr first. Each case runs in a child
interpreter, with CPython's private subinterpreter module (_interpreters
from 3.13, _xxsubinterpreters before) in its legacy configuration (a
shared GIL, single-phase extensions allowed), where the import gets as far
as cmr's own code; in 3.12's isolated configuration CPython itself refuses
the extension, which is checked too."""

import importlib.util
import subprocess
import sys
import textwrap

import pytest

MODULE = next((name for name in ("_interpreters", "_xxsubinterpreters") if importlib.util.find_spec(name)), None)
pytestmark = pytest.mark.skipif(MODULE is None, reason="this Python has no subinterpreter module")

SCRIPT = textwrap.dedent("""
    import os, sys, tempfile
    import {module} as interpreters

    def new_interpreter(isolated):
        if hasattr(interpreters, "new_config"):  # 3.13 and later
            return interpreters.create(interpreters.new_config("isolated" if isolated else "legacy"))
        if sys.version_info >= (3, 12):
            return interpreters.create(isolated=isolated)
        return interpreters.create()  # 3.11: always shares the GIL

    def import_in_subinterpreter(isolated=False):
        fd, path = tempfile.mkstemp()
        os.close(fd)
        sub = new_interpreter(isolated)
        interpreters.run_string(sub, f'''
    try:
        import cmr
    except ImportError as error:
        result = "refused: " + str(error)
    else:
        result = "imported"
    with open({{path!r}}, "w") as out:
        out.write(result)
    ''')
        interpreters.destroy(sub)
        with open(path) as result:
            text = result.read()
        os.unlink(path)
        return text

    def main_interpreter_still_works():
        import cmr
        from cmr import mr
        try:
            mr.PoolMemoryResource(mr.SystemMemoryResource(), 2048, 1024)
        except cmr.RMMError as error:  # the main interpreter's class, not a NameError
            assert isinstance(error, ValueError) and "CMR_ERROR_INVALID_ARGUMENT" in str(error), error
        else:
            raise AssertionError("not refused")

        class ProtocolStream:
            def __cuda_stream__(self):
                return (0, 0)

        host = mr.SystemMemoryResource()
        buffer = cmr.DeviceBuffer(size=8, stream=ProtocolStream(), mr=host)  # the stream converter
        buffer.copy_from_host(b"12345678")
        assert buffer.tobytes() == b"12345678"
        ptr = host.allocate(64, cmr.Stream())
        host.deallocate(ptr, 64, ProtocolStream())
        try:
            cmr.DeviceBuffer(size=8, stream=object(), mr=host)
        except TypeError:
            pass

    {body}
    print("done")
""")


def run_child(body: str) -> str:
    """Runs SCRIPT with `body` in a new interpreter, which must end normally; its output."""
    code = SCRIPT.format(module=MODULE, body=textwrap.dedent(body).strip())
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0 and child.stdout.strip().endswith("done"), (
        f"the child ended with {child.returncode}:\n{child.stdout}\n{child.stderr}")
    return child.stdout


REFUSAL = "refused: cmr can be imported only in the main interpreter"


def test_a_subinterpreter_after_the_main_one_is_refused():
    run_child(f"""
        import cmr
        main_interpreter_still_works()
        text = import_in_subinterpreter()
        assert text.startswith({REFUSAL!r}) and "one set of hooks for the process" in text, text
        main_interpreter_still_works()
        assert import_in_subinterpreter().startswith({REFUSAL!r})  # and again
        main_interpreter_still_works()
    """)


def test_a_subinterpreter_before_the_main_one_is_refused():
    run_child(f"""
        text = import_in_subinterpreter()
        assert text.startswith({REFUSAL!r}), text
        main_interpreter_still_works()
    """)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="3.11 has no isolated subinterpreters")
def test_an_isolated_subinterpreter_is_refused_by_cpython():
    run_child("""
        import cmr
        text = import_in_subinterpreter(isolated=True)
        assert text.startswith("refused: ") and "subinterpreter" in text, text
        main_interpreter_still_works()
    """)
