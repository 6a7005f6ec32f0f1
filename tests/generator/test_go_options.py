# SPDX-License-Identifier: Apache-2.0
"""The Go options: one With<Parameter> per parameter name, serving every
resource that has the parameter (generator/render.py go_options)."""

from __future__ import annotations

import unittest
from types import SimpleNamespace

from generator.render import go_options, render_go_module
from generator.spec import load_specs

from .support import SPEC


def _resource(name, *params):
    made = [SimpleNamespace(name=p, default=0, go_type=t, go_option_type="*" + t) for p, t in params]
    return SimpleNamespace(name=name, params=made, callback_args=[])


class GoOptions(unittest.TestCase):
    def test_one_option_serves_every_resource_with_the_parameter(self):
        go = render_go_module(load_specs(SPEC))["go/cmr/resources_generated.go"]
        self.assertIn("func WithInitialPoolSize(value uint64) InitialPoolSizeOption {", go)
        self.assertIn("func (o InitialPoolSizeOption) applyPool(s *poolOptions) {", go)
        self.assertIn("func (o InitialPoolSizeOption) applyCudaAsync(s *cudaAsyncOptions) {", go)
        self.assertNotIn("WithPoolInitialPoolSize", go)

    def test_a_parameter_with_two_go_types_gets_an_option_per_resource(self):
        resources = [_resource("a", ("size", "uint64")), _resource("b", ("size", "int"))]
        grouped = dict(go_options(resources))
        self.assertEqual(sorted(grouped), ["a_size", "b_size"])
        self.assertEqual([r.name for r, _ in grouped["a_size"]], ["a"])

    def test_options_are_grouped_by_name(self):
        resources = [_resource("a", ("size", "uint64"), ("label", "string")), _resource("b", ("size", "uint64"))]
        grouped = go_options(resources)
        self.assertEqual([name for name, _ in grouped], ["label", "size"])
        self.assertEqual([r.name for r, _ in dict(grouped)["size"]], ["a", "b"])
