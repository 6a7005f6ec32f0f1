# SPDX-License-Identifier: Apache-2.0
"""A bad spec is rejected with exit 1 and one `file: field: problem` line per
problem, never a traceback, and nothing is written.

Each bad_specs/<case>.toml is wrong in one way (several_problems in several)
and is checked next to a copy of the valid spec/system.toml, so references to
it resolve and a good file beside a bad one is seen to add no line. A new
case is a file there plus its lines in EXPECTED."""

from __future__ import annotations

import copy
import datetime
import json
import re
import tomllib
from concurrent.futures import ThreadPoolExecutor

from generator.spec import SpecError, load_specs

from .support import BAD_SPECS, GOOD_SPECS, SPEC, GeneratorTestCase, run_generator

KNOWN_CASES = ("zero_size, random_sizes, alignments, equality, properties, out_of_memory, sync_pair, "
               "streams, threads, free_on_other_thread, destroyed_handle")
RETURNABLE = "void, size_t, int, bool, double, pointer, string, properties"
SIZE_T_DEFAULTS = 'a non-negative integer or one of "half_of_free_device_memory", "unlimited", "keep_everything"'
NEEDS_UPSTREAM = 'needs a resource_ref parameter named "upstream"'

# case -> the lines expected on stderr, each without its leading "<file>: ".
EXPECTED = {
    # top level
    "unknown_top_field": ['colour: unknown field "colour"'],
    "missing_name": ["name: missing"],
    "missing_kind": ["kind: missing"],
    "missing_doc": ["doc: missing"],
    "missing_properties": ["properties: missing"],
    "missing_thread_safe": ["thread_safe: missing"],
    "missing_backends": ["backends: missing"],
    "thread_safe_string": ["thread_safe: must be a boolean (true or false), not a string"],
    "backends_string": ["backends: must be an array, not a string"],
    "doc_integer": ["doc: must be a string, not an integer"],
    "properties_integer": ["properties: must be a string or an array, not an integer"],
    "state_string": ['state: must be true or false, not "no"'],
    "hooks_unknown": ['hooks: ["init", "setup"] must list each of "init", "fini", "stats", "segments", "export_records" at most once'],
    "hooks_repeated": ['hooks: ["fini", "fini"] must list each of "init", "fini", "stats", "segments", "export_records" at most once'],
    "hooks_string": ['hooks: "init" must list each of "init", "fini", "stats", "segments", "export_records" at most once'],
    "method_sets_missing": ['method_sets: "no_such_set": no_such_set.toml cannot be read (No such file or directory)'],
    "method_sets_string": ['method_sets: "driver_pool" must be a list of distinct method set names'],
    "name_mismatch": ['name: "other" must match the file name "name_mismatch"'],
    "name_upper_case": ['name: "Upper" is not a lower-case identifier'],
    "name_c_keyword": ['name: "int" is reserved in the generated C'],
    "unknown_kind": ['kind: unknown kind "pool" (known: leaf, suballocator, adaptor)'],
    "unknown_backend": ['backends: unknown backend "rocm" (known: cuda, host)'],
    "repeated_backend": ["backends: names repeat"],
    "empty_backends": ["backends: a resource must exist in at least one backend"],
    "unknown_equality": ['equality: unknown rule "value" (known: identity, type, impl, upstream)'],
    "max_alignment_not_power_of_two": ['max_alignment: 768 must be "any", "upstream" or a power of two of at least 256'],
    "max_alignment_too_small": ['max_alignment: 128 must be "any", "upstream" or a power of two of at least 256'],
    "max_alignment_upstream_on_leaf": [f'max_alignment: "upstream" {NEEDS_UPSTREAM}'],
    "properties_bad_string": ['properties: "same" must be "upstream", "dynamic" or a list of flags'],
    "properties_unknown_flag": ['properties: unknown property "pageable" (known: device_accessible, host_accessible)'],
    "properties_flag_table": ["properties: unknown property {device = true} (known: device_accessible, host_accessible)"],
    # parameters
    "unknown_type": ['params[0].type: unknown type "sizet"'],
    "unknown_param_field": ['params[0].deafult: unknown field "deafult"'],
    "param_name_integer": ["params[0].name: must be a string, not an integer"],
    "param_name_reserved": ['params[0].name: "out" is reserved in the generated C'],
    "param_type_missing": ["params[0].type: missing"],
    "params_not_tables": ["params[0]: must be a table"],
    "repeated_param": ['params[1].name: "size" repeats'],
    "values_on_size_t": ['params[0].values: does not apply to type "size_t"'],
    "retain_on_size_t": ["params[0].retain: applies to resource_ref parameters only, as true or false"],
    # constraints
    "constraint_wrong_type": ['params[0].multiple_of: does not apply to type "bool"'],
    "constraint_not_integer": ["params[0].multiple_of: must be an integer, not 1.5"],
    "constraint_negative": ["params[0].min: must not be negative for a size_t, not -1"],
    "power_of_two_string": ['params[0].power_of_two: must be true or false, not "yes"'],
    "multiple_of_zero": ["params[0].multiple_of: must be positive, not 0"],
    "min_above_max": ["params[0].min: min 1024 is greater than max 256"],
    # defaults
    "default_not_multiple": ["params[0].default: 100 is not a multiple of 256"],
    "default_not_power_of_two": ["params[0].default: 384 is not a power of two"],
    "default_zero_nonzero": ["params[0].default: 0 breaks nonzero = true"],
    "default_null_nonzero": ['params[0].default: "null" breaks nonzero = true'],
    "default_below_min": ["params[0].default: 128 is outside [256, inf]"],
    "default_bool_for_size_t": [f'params[0].default: true is not a valid default for type "size_t" '
                                f"(expected {SIZE_T_DEFAULTS})"],
    "default_negative_size_t": [f'params[0].default: -1 is not a valid default for type "size_t" '
                                f"(expected {SIZE_T_DEFAULTS})"],
    "default_unknown_named": [f'params[0].default: "everything" is not a valid default for type "size_t" '
                              f"(expected {SIZE_T_DEFAULTS})"],
    "default_named_wrong_type": ['params[0].default: named default "unlimited" does not apply to type "int"'],
    "default_int_out_of_range": ['params[0].default: 1099511627776 is not a valid default for type "int" '
                                 "(expected an integer in [-2147483648, 2147483647])"],
    "default_double_inf": ['params[0].default: inf is not a valid default for type "double" '
                           "(expected a finite number)"],
    "default_properties_table": ['params[0].default: [{a = 1}] is not a valid default for type "properties" '
                                 '(expected an array of "device_accessible", "host_accessible")'],
    "default_resource_ref": ["params[0].default: a resource_ref has no default"],
    # enums
    "enum_default_not_a_value": ['params[0].default: "c" is not a valid default for type "enum" '
                                 '(expected one of "a", "b")'],
    "enum_no_values": ["params[0].values: an enum needs a non-empty array of value names"],
    "enum_repeated_values": ["params[0].values: names repeat"],
    # checks
    "check_unknown_identifier": ['checks[0].expr: "limit" is not a parameter'],
    "check_unknown_message_field": ['checks[0].message: "{sise}" is not a printable parameter'],
    "check_empty_expr": ["checks[0].expr: is empty"],
    "check_missing_message": ["checks[0].message: missing"],
    # methods
    "method_named_create": ['methods[0].name: "create" is generated for every resource'],
    "repeated_method": ['methods[1].name: "count" repeats'],
    "method_returns_resource_ref": [f'methods[0].returns: "resource_ref" cannot be returned (known: {RETURNABLE})'],
    "method_returns_array": [f'methods[0].returns: ["size_t"] cannot be returned (known: {RETURNABLE})'],
    "method_param_default": ["methods[0].params[0].default: method parameters take no defaults"],
    "method_param_enum": ["methods[0].params[0].type: an enum is a constructor parameter only"],
    "method_stored_unknown": ['methods[0].stored: "sise" is not a parameter of the resource (known: size, label)'],
    "method_stored_string": ['methods[0].stored: "label" is a string, which cannot be stored '
                             "(storable: size_t, int, bool, double, pointer, properties)"],
    "method_stored_wrong_returns": ['methods[0].returns: must be "size_t", the type of the stored "size" (or left out)'],
    "method_stored_with_params": ["methods[0].params: a stored getter takes no parameters"],
    "method_counter_not_a_field": ['methods[0].counter: "in use" is not a C field name (or a member of one, a.b)'],
    "method_counter_wrong_returns": ['methods[0].returns: must be "size_t", the type of a counter (or left out)'],
    "method_counter_and_stored": ["methods[0].counter: a getter is either stored or a counter, not both"],
    "method_changes_not_bool": ['methods[0].changes: "yes" is not true or false'],
    "method_changes_stored": ["methods[0].changes: a stored or counter getter only reads"],
    "method_hands_out_not_bool": ["methods[0].hands_out: 1 is not true or false"],
    "method_hands_out_counter": ["methods[0].hands_out: a stored or counter getter only reads"],
    # conformance
    "conformance_unknown_field": ['conformance.upstream: unknown field "upstream"'],
    # the Python class
    "python_unknown_field": ['python.klass: unknown field "klass"'],
    "python_bad_class": ['python.class: "Not a name" is not a Python class name'],
    "python_unknown_names": ["python.names.sise: is not a parameter", "python.aliases.usd: is not a method",
                             'python.aliases.used: "2bad" is not a Python identifier'],
    "python_hidden_without_default": ['python.hidden: "size" has no default to pass in its place',
                                      'python.hidden: "nothing" is not a parameter'],
    "conformance_bad_upstream_kind": ['conformance.upstreams.device: must be "host" or "gpu"'],
    "conformance_unknown_upstream": ['conformance.upstreams.host: "nosuch" is not a resource in spec/'],
    "conformance_upstream_not_makeable": ['conformance.upstreams: "conformance_upstream_not_makeable" cannot be '
                                          "made with defaults alone, so it cannot serve as a test upstream"],
    "conformance_args_unknown_param": ["conformance.args.sise: is not a parameter"],
    "conformance_empty_arg": ["conformance.args.size: is empty"],
    "conformance_unknown_skip": [f'conformance.skip: unknown case "threading" (known: {KNOWN_CASES})'],
    "conformance_unknown_reject": ['conformance.rejects: unknown refusal "double_free" (known: unknown_pointer, wrong_size)'],
    "conformance_missing_arg": ["conformance.args.size: missing: the conformance battery needs a value for a "
                                "parameter without a default"],
    # kinds, upstreams and state
    "suballocator_without_upstream": [f"params: a suballocator {NEEDS_UPSTREAM}"],
    "suballocator_without_test_upstream": ["conformance.upstreams: a suballocator needs at least one upstream "
                                           "to be tested over"],
    "leaf_with_upstream": ['params: a leaf has no "upstream"; make it a suballocator or adaptor'],
    "properties_upstream_without_upstream": [f'properties: "upstream" {NEEDS_UPSTREAM}'],
    "equality_upstream_without_upstream": [f'equality: "upstream" {NEEDS_UPSTREAM}'],
    "stateless_with_params": ["state: a resource with parameters keeps them in its state: state must be true"],
    "stateless_with_methods": ["state: methods read the resource's state: state must be true"],
    "stateless_with_hooks": ["state: hooks set up the resource's state: state must be true"],
    # TOML itself
    "toml_syntax_error": ["Invalid value (at line 3, column 8)"],
    # several problems in one file: all of them, in the order of the file
    "several_problems": [
        'kind: unknown kind "pool" (known: leaf, suballocator, adaptor)',
        "thread_safe: missing",
        'params[0].type: unknown type "sizet"',
        'methods[0].name: "destroy" is generated for every resource',
    ],
    "param_binding_keyword": ['params[0].name: "byte" is a keyword of Java and C#: the generated binding would not compile',
                              'methods[0].name: "lock" is a keyword of C#: the generated binding would not compile'],
    # [[expect]]: behavioural expectations
    "expect_unknown_step": ['expect[0].steps[0]: {free = 0} must have exactly one of allocate, deallocate, call, equals'],
    "expect_two_kinds": ['expect[0].steps[0]: {allocate = 256, deallocate = 0} must have exactly one of allocate, '
                         'deallocate, call, equals'],
    "expect_dead_block": ["expect[0].steps[2].deallocate: 0 is no live block (live: none; blocks are numbered from 0 "
                          "as allocate steps succeed)"],
    "expect_unknown_getter": ['expect[0].steps[0].equals.size: "size" is no getter of expect_unknown_getter with a '
                              "comparable result (known: capacity)"],
    "expect_upstream_of_leaf": ['expect[0].steps[0].equals.upstream.bytes_current: "upstream.bytes_current": the '
                                "resource has no upstream"],
    "expect_wrong_value_type": ['expect[0].steps[0].equals.capacity: "4 KiB" must be an integer in '
                                "[0, 9223372036854775807] (a size_t)"],
    "expect_unknown_failure": ['expect[0].steps[0].fails: unknown failure "too_big" (known: out_of_memory)'],
    "expect_checks_nothing": ["expect[0].steps: checks nothing: add an equals step, a fails or an aligned_to"],
    "expect_bad_arg": ["expect[0].args.capacity: 100000 breaks a constraint of the parameter",
                       "expect[0].args.colour: is not a parameter an expectation can give (known: capacity)"],
    "expect_repeated_name": ['expect[1].name: "x" repeats'],
    "expect_bad_alignment": ["expect[0].steps[0].aligned_to: 768 must be a power of two"],
    "expect_bad_call_argument": ["expect[0].steps[0].with.limit: 100 breaks a constraint of the parameter",
                                 "expect[0].steps[1].with: must be a table of parameter = value, e.g. { limit = 4096 }",
                                 "expect[0].steps[2].with: set_limit needs limit"],
    "expect_bad_call_args": ["expect[0].steps[0].with: resize needs limit",
                             "expect[0].steps[1].with.colour: is no parameter of resize (its parameters: limit)",
                             "expect[0].steps[2].with.limit: 100000 breaks a constraint of the parameter"],
    "environment_bad_name": ["conformance.environment.log_file: is not an upper-case environment variable name"],
}


class BadSpecCorpus(GeneratorTestCase):

    def test_every_case_has_a_file_and_every_file_a_case(self):
        self.assertEqual(sorted(p.stem for p in BAD_SPECS.glob("*.toml")), sorted(EXPECTED))

    def test_each_bad_spec_is_rejected_with_its_lines(self):
        specs = {case: self.spec_dir(BAD_SPECS / f"{case}.toml", SPEC / "system.toml") for case in EXPECTED}
        with ThreadPoolExecutor(max_workers=8) as pool:  # one process each: run them side by side
            runs = dict(zip(specs, pool.map(lambda spec: run_generator("--spec", spec, "--out", spec.parent / "out"),
                                            specs.values())))
        for case, lines in EXPECTED.items():
            with self.subTest(case=case):
                spec = specs[case]
                self.assert_rejected(runs[case], spec.parent / "out", [f"{spec / case}.toml: {line}" for line in lines])

    def test_problems_of_several_files_are_all_reported_in_file_order(self):
        cases = ["unknown_kind", "unknown_type"]
        spec = self.spec_dir(*(BAD_SPECS / f"{c}.toml" for c in cases), real_spec=True)
        out = spec.parent / "out"
        expected = [f"{spec / c}.toml: {line}" for c in cases for line in EXPECTED[c]]
        self.assert_rejected(run_generator("--spec", spec, "--out", out), out, expected)


class BadSpecFolders(GeneratorTestCase):

    def test_empty_spec_dir(self):
        spec = self.spec_dir()
        out = spec.parent / "out"
        self.assert_rejected(run_generator("--spec", spec, "--out", out), out, [f"{spec}: no *.toml spec files"])

    def test_missing_spec_dir(self):
        spec = self.tmp() / "nowhere"
        out = spec.parent / "out"
        self.assert_rejected(run_generator("--spec", spec, "--out", out), out, [f"{spec}: no *.toml spec files"])

    def test_file_that_is_not_utf8(self):
        spec = self.spec_dir(SPEC / "system.toml")
        (spec / "latin1.toml").write_bytes('doc = "caf\xe9"\n'.encode("latin-1"))
        out = spec.parent / "out"
        self.assert_rejected(run_generator("--spec", spec, "--out", out), out,
                             [f"{spec}/latin1.toml: not UTF-8 text (invalid continuation byte at byte 10)"])


# Every kind of value TOML can hold, to put where the spec expects another.
TOML_VALUES = ["text", "", 0, -1, 3, 1.5, True, False, [], [1], ["x"], [{}], [[1]], {}, {"name": 1},
               datetime.datetime(2020, 1, 1), datetime.date(2020, 1, 1), datetime.time(1, 2)]
DELETE = object()
PROBLEM_LINE = re.compile(r"^\S+: [\w.\[\]]+: .+$")


def _toml(value) -> str:
    """A value as TOML, inline (enough for the toy spec and TOML_VALUES)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml, value)) + "]"
    return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"


def _locations(node, path=()):
    """The path of every value in a parsed spec, outermost first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield path + (key,)
        yield from _locations(child, path + (key,))


class TypeConfusion(GeneratorTestCase):
    """Every value of the toy spec replaced by every kind of TOML value, or
    removed: the loader either accepts the result or reports problem lines,
    and never raises anything else."""

    def test_no_value_anywhere_crashes_the_loader(self):
        toy = tomllib.loads((GOOD_SPECS / "toy_pool.toml").read_text())
        spec = self.spec_dir(SPEC / "system.toml")
        target = spec / "toy_pool.toml"
        for location in _locations(toy):
            for value in TOML_VALUES + [DELETE]:
                data = copy.deepcopy(toy)
                parent = data
                for key in location[:-1]:
                    parent = parent[key]
                if value is DELETE:
                    del parent[location[-1]]
                else:
                    parent[location[-1]] = value
                target.write_text("".join(f"{k} = {_toml(v)}\n" for k, v in data.items()))
                with self.subTest(location=location, value=value):
                    try:
                        load_specs(spec)
                    except SpecError as e:
                        for line in e.problems:
                            self.assertTrue(line.startswith(f"{target}: "), line)
                            self.assertRegex(line, PROBLEM_LINE)
