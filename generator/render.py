# SPDX-License-Identifier: Apache-2.0
"""Render the model into the files of generated/."""

from __future__ import annotations

from pathlib import Path

import jinja2

from .c_format import format_c
from .model import POINTEES, TYPES
from .spec import SpecError

TEMPLATES = Path(__file__).parent / "templates"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _pointee_headers(resources) -> list[str]:
    """The headers that declare what the resources' pointer parameters point to."""
    return sorted({POINTEES[p.pointee] for r in resources for p in r.params if p.pointee})


def go_options(resources) -> list[tuple[str, list]]:
    """The Go options, one per parameter name with a default across every
    resource (a callback's argument excepted): [(name, [(resource, parameter), ...])],
    by name. One option (WithInitialPoolSize) serves each resource that has
    the parameter where it has one Go type everywhere; otherwise each
    resource has its own, With<Resource><Name> (Param.go_option_word)."""
    options: dict[str, list] = {}
    for r in resources:
        for p in r.params:
            if p.default is not None and p not in r.callback_args:
                options.setdefault(p.name, []).append((r, p))
    merged: dict[str, list] = {}
    for name, users in options.items():
        types = {(p.go_type, p.go_option_type) for _, p in users}
        if len(types) == 1:
            merged[name] = users
            continue
        # One name, several types (each resource's own enum): an option per
        # resource, named after it (WithPoolCapture), since one With<Name>
        # cannot take them all.
        for r, p in users:
            p.go_option_word = f"{r.name}_{name}"
            merged[p.go_option_word] = [(r, p)]
    return sorted(merged.items())


def render_go_module(resources) -> dict[str, str]:
    """The generated files of the Go module (go/), as {path relative to the
    repository root: text}. They live beside the hand-written ones because a
    Go package is one folder, and the go tool runs SWIG over the package's
    .swig file itself."""
    env = _environment()
    return {
        "go/internal/capi/swig/capi.swig": env.get_template("go/cmr_go.i.j2").render(resources=resources),
        "go/cmr/resources_generated.go": env.get_template("go/resources.go.j2").render(
            resources=resources, options=go_options(resources)),
    }


def render_all(resources) -> dict[str, str]:
    """Every generated file, as {path relative to generated/: text}, the C formatted."""
    env = _environment()
    by_name = {r.name: r for r in resources}
    files = {
        "include/cmr/resources.hpp": env.get_template("cpp/resources.hpp.j2").render(resources=resources),
        "include/cmr/resources.h": env.get_template("resources.h.j2").render(
            resources=resources, pointee_headers=_pointee_headers(resources)),
        "src/impl.h": env.get_template("impl.h.j2").render(resources=resources),
        "cmake/resources.cmake": env.get_template("resources.cmake.j2").render(resources=resources),
        "docs/api.md": env.get_template("api.md.j2").render(resources=resources),
        "src/stack_table.c": env.get_template("stack_table.c.j2").render(resources=resources),
        "swig/cmr_python.i": env.get_template("cmr_python.i.j2").render(resources=resources),
        "python/cmr/mr.py": env.get_template("mr.py.j2").render(resources=resources),
        "python/cmr/mr.pyi": env.get_template("mr.pyi.j2").render(resources=resources),
        "swig/cmr_java.i": env.get_template("java/cmr_java.i.j2").render(resources=resources),
        "swig/cmr_csharp.i": env.get_template("csharp/cmr_csharp.i.j2").render(resources=resources),
        "csharp/ResourceTypes.cs": env.get_template("csharp/ResourceTypes.cs.j2").render(resources=resources),
        "csharp/Optional.cs": env.get_template("csharp/Optional.cs.j2").render(
            optional_types=[t for t in TYPES.values() if t.optional]),
    }
    java_class_name = env.get_template("java/java_macros.j2").module.class_name
    for r in resources:
        java_class, csharp_class = java_class_name(r), r.python.class_name
        # One file per resource and template: parallel additions touch disjoint files.
        per_resource = {
            f"src/resources/{r.name}.c": "resource.c.j2",
            f"java/org/cmr/{java_class}.java": "java/Resource.java.j2",
            f"csharp/{csharp_class}.cs": "csharp/resource.cs.j2",
        }
        if r.binding_testable:
            per_resource.update({
                f"tests/python/test_resource_{r.name}.py": "tests/test_resource.py.j2",
                f"tests/go/resource_{r.name}_test.go": "tests/resource_test.go.j2",
                f"tests/java/{java_class}Test.java": "tests/ResourceTest.java.j2",
                f"tests/csharp/{csharp_class}Tests.cs": "tests/ResourceTests.cs.j2",
            })
        for path, template in per_resource.items():
            files[path] = env.get_template(template).render(r=r)
    files["java/org/cmr/ResourceClasses.java"] = env.get_template("java/ResourceClasses.java.j2").render(
        resources=resources)
    conformance = env.get_template("conformance.c.j2")
    for r in resources:
        names = r.conformance.upstreams_host + [u for u in r.conformance.upstreams_gpu
                                                if u not in r.conformance.upstreams_host]
        files[f"tests/conformance_{r.name}.c"] = conformance.render(r=r, upstreams=[by_name[u] for u in names])
    return format_c(files)
