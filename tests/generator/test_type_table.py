# SPDX-License-Identifier: Apache-2.0
"""The type table (generator/model.py TYPES) is the one place that knows a
parameter type: a type added there reaches the C header and every binding,
and no template spells a type by name."""

from __future__ import annotations

import re
from unittest import mock

from generator import model
from generator.render import TEMPLATES, render_all, render_go_module
from generator.spec import load_specs

from .support import SPEC, GeneratorTestCase, make_spec_dir

# A type the spec does not have: a 32-bit unsigned count.
UINT32 = model.CType(
    "uint32", "uint32_t", "%u", frozenset({"min", "max"}), numeric=True, scalar=True,
    py=model.PythonForms("int", "", '_args.uint32({v}, "{v}")'),
    go=model.GoForms("uint32"),
    java=model.JavaForms("int", given='Arguments.uint32("{v}", {v})', returns="INT"),
    cs=model.CSharpForms("uint"))

GAUGE = '''
name = "toy_gauge"
kind = "adaptor"
doc = "A test-only adaptor with a parameter of a new type."
properties = "upstream"
thread_safe = true
backends = ["host"]

[[params]]
name = "upstream"
type = "resource_ref"
doc = "Where the memory comes from."

[[params]]
name = "level"
type = "uint32"
max = 100
doc = "A level."

[[methods]]
name = "set_level"
doc = "Sets the level."
params = [{ name = "level", type = "uint32", doc = "The new level." }]

[conformance]
upstreams = { host = ["system"] }
args = { level = "7u" }
'''


class NewTypeInOnePlace(GeneratorTestCase):
    """A CType added to TYPES, and nothing else, appears in every output."""

    @classmethod
    def setUpClass(cls):
        spec = make_spec_dir(cls.class_tmp(), SPEC / "system.toml")
        (spec / "toy_gauge.toml").write_text(GAUGE, encoding="utf-8")
        with mock.patch.dict(model.TYPES, {"uint32": UINT32}):
            specs = load_specs(spec)
            cls.files = {**render_all(specs), **render_go_module(specs)}

    def test_c(self):
        self.assert_has("include/cmr/resources.h", "cmr_resource_ref upstream, uint32_t level, cmr_toy_gauge_resource **out")
        self.assert_has("src/resources/toy_gauge.c", '"cmr_toy_gauge_resource_create: level %u is above the maximum 100"')

    def test_python(self):
        self.assert_has("python/cmr/mr.py", '_args.uint32(level, "level")', "def set_level(self, level) -> None:")
        self.assert_has("python/cmr/mr.pyi", "level: int")

    def test_go(self):
        self.assert_has("go/cmr/resources_generated.go", "func NewToyGaugeResource(upstream Resource, level uint32)",
                        "func (r *ToyGaugeResource) SetLevel(level uint32) error")

    def test_java(self):
        self.assert_has("java/org/cmr/ToyGaugeResourceAdaptor.java",
                        "public ToyGaugeResourceAdaptor(MemoryResource upstream, int level)",
                        'create(upstream, Arguments.uint32("level", level))',
                        'CmrNative.cmr_toy_gauge_resource_set_level(handle(), Arguments.uint32("level", level))')

    def test_csharp(self):
        self.assert_has("csharp/ToyGaugeResourceAdaptor.cs",
                        "public ToyGaugeResourceAdaptor(MemoryResource upstream, uint level)",
                        "public void SetLevel(uint level)")


class TemplatesSpellNoType(GeneratorTestCase):
    """Templates print the table's forms; a type's name in one is a second
    place that would have to change with the type."""

    def test_no_template_names_a_type(self):
        names = "|".join(map(re.escape, model.TYPES))
        spelled = re.compile(rf"""["']({names})["']|\btype\.name\b|\breturns\.name\b|\bt\.name\b""")
        found = []
        for template in sorted(TEMPLATES.rglob("*.j2")):
            for number, line in enumerate(template.read_text(encoding="utf-8").splitlines(), 1):
                if spelled.search(line):
                    found.append(f"{template.relative_to(TEMPLATES)}:{number}: {line.strip()}")
        self.assertEqual(found, [], "templates that spell a type by name")

    def test_every_type_has_every_language(self):
        for ctype in model.TYPES.values():
            with self.subTest(type=ctype.name):
                self.assertTrue(ctype.go.type and ctype.java.type and ctype.cs.type and ctype.py.type)
                if ctype.is_callback:
                    self.assertEqual(set(ctype.swig), set(model.SHIM_PREFIXES))
                    self.assertTrue(ctype.py.sample and ctype.go.sample and ctype.java.sample and ctype.cs.sample)
