# SPDX-License-Identifier: Apache-2.0
"""The package as tools see it: inspect.signature (and so help()) for every
public callable, the C-implemented ones included; stubs with one definition
of each name, DeviceBuffer's stub and run-time signature alike; the version;
the private C API; the RMM-style program python.mypy_strict checks, run."""

import ast
import importlib
import importlib.metadata
import importlib.util
import inspect
import pathlib
import pydoc
import re
import site

import pytest

import cmr
from cmr import _capi as capi, mr
from conftest import DISTRIBUTION_NAME, installed_distribution

PACKAGE = pathlib.Path(cmr.__file__).parent
TYPING = pathlib.Path(__file__).parent / "typing"
PUBLIC_MODULES = ["cmr", "cmr.mr", "cmr.mr.experimental", "cmr.statistics", "cmr.pylibrmm",
                  "cmr.pylibrmm.stream", "cmr.pylibrmm.cuda_stream", "cmr.pylibrmm.device_buffer",
                  "cmr.pylibrmm.memory_resource", "cmr.pylibrmm.cuda_stream_pool", "cmr.pylibrmm.logger",
                  "cmr.pylibrmm.helper", "cmr.pylibrmm.utils", "cmr.allocators.cupy"]


def _public_callables():
    """(where, callable) for each public function, class and public method
    of a class, of every public module."""
    seen = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]):
            value = getattr(module, name)
            if not callable(value) or id(value) in seen or isinstance(value, type) and issubclass(value, BaseException):
                continue
            seen.add(id(value))
            yield f"{module_name}.{name}", value
            if isinstance(value, type):
                for attribute, member in vars(value).items():
                    if (not attribute.startswith("_") or attribute == "__init__") and callable(member):
                        yield f"{module_name}.{name}.{attribute}", getattr(value, attribute)


CALLABLES = dict(_public_callables())


@pytest.mark.parametrize("where", sorted(CALLABLES))
def test_every_public_callable_has_a_signature(where):
    inspect.signature(CALLABLES[where])


def test_the_c_implemented_callables_show_their_parameters(host_mr):
    assert list(inspect.signature(mr.SystemMemoryResource.allocate).parameters) == ["self", "nbytes", "stream"]
    assert list(inspect.signature(host_mr.deallocate).parameters) == ["ptr", "nbytes", "stream"]
    assert inspect.signature(host_mr.allocate).parameters["stream"].default == cmr.DEFAULT_STREAM
    buffer = inspect.signature(cmr.DeviceBuffer)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in buffer.parameters.values())
    assert buffer.parameters["mr"].default is None and buffer.parameters["size"].default == 0
    assert "nbytes" in pydoc.render_doc(mr.SystemMemoryResource.allocate)
    assert "size=0" in pydoc.render_doc(cmr.DeviceBuffer)
    assert cmr.DeviceBuffer.__doc__.startswith("Untyped, uninitialised device memory")


def _stub_functions(path: pathlib.Path, class_name: str | None = None) -> dict:
    """name -> FunctionDef of a stub's module level, or of one of its classes."""
    tree = ast.parse(path.read_text())
    body = tree.body
    if class_name is not None:
        body = next(node for node in body if isinstance(node, ast.ClassDef) and node.name == class_name).body
    return {node.name: node for node in body if isinstance(node, ast.FunctionDef)}


def test_device_buffers_stub_has_the_run_time_signature():
    stub = _stub_functions(PACKAGE / "_device_buffer.pyi", "DeviceBuffer")["__init__"]
    stubbed = [a.arg for a in stub.args.kwonlyargs]
    assert stubbed == list(inspect.signature(cmr.DeviceBuffer).parameters)


@pytest.mark.parametrize("stub", sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.pyi")))
def test_each_stub_defines_each_name_once(stub):
    """mypy stops at a stub that defines a name twice (mr.pyi once declared
    eleven functions twice)."""
    tree = ast.parse((PACKAGE / stub).read_text())
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.ImportFrom):
            names += [alias.asname or alias.name for alias in node.names if alias.name != "*"]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_statistics_counters_are_typed_one_way():
    """The generated class leaves out what its mixin replaces: push/pop_counters return Statistics."""
    stub = _stub_functions(PACKAGE / "mr.pyi", "_StatisticsResourceAdaptor")
    assert "push_counters" not in stub and "pop_counters" not in stub
    assert "push_counters" not in vars(mr._StatisticsResourceAdaptor)
    counts = mr.StatisticsResourceAdaptor(mr.SystemMemoryResource()).push_counters()
    assert isinstance(counts, cmr.statistics.Statistics)


def test_reinitialize_and_the_hooks_are_typed():
    for function in (cmr.reinitialize, cmr.register_reinitialize_hook, cmr.unregister_reinitialize_hook):
        signature = inspect.signature(function)
        assert signature.return_annotation is not inspect.Signature.empty, function
        for parameter in signature.parameters.values():
            assert parameter.annotation is not inspect.Parameter.empty, (function, parameter)


# ---- the version and the private C API --------------------------------------------------

def test_the_version_is_exported_and_the_metadatas():
    """cmr.__version__ is the installed distribution's version (cmr-host or
    cmr-cu13, named for the build) and the C library's."""
    assert "__version__" in cmr.__all__
    assert cmr.__version__ == capi.cmr_version()
    distribution = installed_distribution()
    if distribution is not None:
        name = distribution.metadata["Name"]
        assert re.fullmatch(DISTRIBUTION_NAME, name), name
        assert importlib.metadata.version(name) == cmr.__version__


def test_the_c_api_is_private():
    assert "capi" not in cmr.__all__ and not hasattr(cmr, "capi")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("cmr.capi")
    assert capi.__name__ == "cmr._capi" and capi.cmr_version() == cmr._capi.cmr_version()
    for name in cmr.__all__:
        assert hasattr(cmr, name), name


# ---- the program python.mypy_strict checks ---------------------------------------------

def test_the_rmm_style_program_runs():
    spec = importlib.util.spec_from_file_location("rmm_style_program", TYPING / "rmm_style_program.py")
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    assert program.main() == 0


def test_a_typo_in_a_device_buffer_method_is_caught(tmp_path, monkeypatch):
    """cmr.DeviceBuffer has a stub: to mypy it is not Any, so a misspelt
    method is an error (it was not before the stub)."""
    api = pytest.importorskip("mypy.api", reason="no mypy here (Debian: python3-mypy)")
    if PACKAGE.parent not in {pathlib.Path(p) for p in site.getsitepackages()}:
        monkeypatch.setenv("MYPYPATH", str(PACKAGE.parent))  # a build tree's package (mypy finds an installed one)
    program = tmp_path / "typo.py"
    program.write_text("import cmr\n\nbuffer = cmr.DeviceBuffer(size=10)\nbuffer.tobytez()\n")
    stdout, _, status = api.run(["--strict", "--config-file", str(TYPING / "user_program.ini"), "--cache-dir",
                                 str(tmp_path / "cache"), str(program)])
    assert status == 1 and '"DeviceBuffer" has no attribute "tobytez"' in stdout, stdout
