# SPDX-License-Identifier: Apache-2.0
"""The real spec loads and renders deterministically, --check tells a fresh
generated/ from a stale one, and a toy resource using every shape a spec can
take renders the argument checks it declares into C that compiles."""

from __future__ import annotations

import shutil
import unittest
from pathlib import Path

from generator.render import render_all, render_go_module
from generator.spec import load_specs

from .support import (GENERATED, GOOD_SPECS, ROOT, SPEC, GeneratorTestCase, compile_c, have_cc,
                      make_spec_dir, run_generator, tree, write_tree)

TOY = GOOD_SPECS / "toy_pool.toml"
RETRY = GOOD_SPECS / "toy_retry.toml"
STALE_HINT = "(run python3 -m generator)"
EXTRA_HINT = "not produced by the spec (remove it or regenerate)"


class RealSpec(GeneratorTestCase):

    def test_loads_every_file(self):
        resources = load_specs(SPEC)
        self.assertEqual([r.name for r in resources], sorted(p.stem for p in SPEC.glob("*.toml")))

    def test_gitattributes_marks_every_generated_file(self):
        # generated/ as a whole, and each file written outside it by name
        lines = (ROOT / ".gitattributes").read_text(encoding="utf-8").splitlines()
        marked = {line.split()[0] for line in lines if line.strip() and not line.startswith("#")
                  and "linguist-generated=true" in line.split()[1:]}
        self.assertIn("generated/**", marked)
        swig_output = {"go/internal/capi/capi_swig.go", "go/internal/capi/capi_swig_wrap.c"}  # wrap.sh's, not the generator's
        self.assertLessEqual(swig_output, marked)
        self.assertEqual(sorted(render_go_module(load_specs(SPEC))), sorted(marked - {"generated/**"} - swig_output))

    def test_rendering_twice_gives_the_same_files(self):
        self.assertEqual(render_all(load_specs(SPEC)), render_all(load_specs(SPEC)))

    def test_output_does_not_depend_on_the_hash_seed(self):
        # Sets and dicts of str iterate in hash order, which changes between
        # processes; nothing generated may depend on it.
        spec = self.spec_dir(TOY, real_spec=True)
        outs = []
        for seed in ("1", "2", "3"):
            out = self.tmp() / "out"
            run = run_generator("--spec", spec, "--out", out, hash_seed=seed)
            self.assertEqual(run.rc, 0, run.stderr)
            outs.append(tree(out))
        self.assertEqual(outs[0], outs[1])
        self.assertEqual(outs[0], outs[2])


class Check(GeneratorTestCase):

    def test_committed_generated_is_fresh(self):
        run = run_generator("--check")
        self.assertEqual((run.rc, run.stderr), (0, ""))

    def test_names_each_stale_missing_and_extra_file(self):
        out = self.tmp() / "generated"
        shutil.copytree(GENERATED, out)
        shutil.copytree(ROOT / "go", out.parent / "go")  # the Go module's generated files, beside it
        with (out / "src/resources/system.c").open("a", encoding="utf-8") as f:
            f.write("/* edited by hand */\n")
        (out / "docs/api.md").unlink()
        (out / "src/leftover.c").write_text("/* from a resource that is gone */\n", encoding="utf-8")
        before = tree(out)

        run = run_generator("--check", "--out", out)

        self.assertEqual(run.rc, 1)
        self.assertEqual(run.errors, [f"{out}/docs/api.md: missing {STALE_HINT}",
                                      f"{out}/src/resources/system.c: stale {STALE_HINT}",
                                      f"{out}/src/leftover.c: {EXTRA_HINT}"])
        self.assertEqual(tree(out), before, "--check wrote to the out folder")

    def test_write_into_an_empty_folder_then_check_it(self):
        out = self.tmp() / "out"
        write = run_generator("--out", out)
        self.assertEqual((write.rc, write.stderr), (0, ""))
        self.assertEqual(tree(out), tree(GENERATED))
        check = run_generator("--check", "--out", out)
        self.assertEqual((check.rc, check.stderr), (0, ""))

    def test_regenerating_removes_files_the_spec_no_longer_produces(self):
        out = self.tmp() / "out"
        shutil.copytree(GENERATED, out)
        (out / "tests/conformance_gone.c").write_text("/* old */\n", encoding="utf-8")
        run = run_generator("--out", out)
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertEqual(tree(out), tree(GENERATED))


def _render(spec: Path, out: Path) -> dict[str, str]:
    files = render_all(load_specs(spec))
    write_tree(out, files)
    return files


class ToyResource(GeneratorTestCase):
    """good_specs/toy_pool.toml added to a copy of spec/."""

    @classmethod
    def setUpClass(cls):
        spec = make_spec_dir(cls.class_tmp(), TOY, real_spec=True)
        out = spec.parent / "out"
        run = run_generator("--spec", spec, "--out", out)
        if run.rc != 0:
            raise AssertionError(f"the toy spec does not render:\n{run.stderr}")
        cls.out = out
        cls.files = tree(out)

    def test_every_file_is_produced(self):
        real = set(tree(GENERATED))
        # SWIG's classes (one per enum) are the build's, not the generator's.
        self.assertEqual(set(self.files), real | {"tests/conformance_toy_pool.c", "src/resources/toy_pool.c",
                                                  "tests/python/test_resource_toy_pool.py",
                                                  "tests/go/resource_toy_pool_test.go",
                                                  "tests/java/ToyPoolMemoryResourceTest.java",
                                                  "tests/csharp/ToyPoolMemoryResourceTests.cs",
                                                  "java/org/cmr/ToyPoolMemoryResource.java",
                                                  "csharp/ToyPoolMemoryResource.cs"})

    def test_csharp_class_takes_every_parameter_with_its_default(self):
        self.assert_has(
            "csharp/ToyPoolMemoryResource.cs",
            "public ToyPoolMemoryResource(MemoryResource upstream, ulong? chunkSize = null, "
            "ulong? maximumSize = null, ToyPoolGrowth growth = ToyPoolGrowth.Doubling, int? maxChunks = null, "
            'string label = "toy \\"pool\\"", double fillRatio = 0.5, bool zeroFill = false)',
            "public void Trim(ulong keepBytes, int keepChunks)")
        self.assert_has("csharp/ResourceTypes.cs", 'case "toy_pool":')

    def test_create_checks_every_constrained_argument(self):
        fn = "cmr_toy_pool_resource_create"
        self.assert_has(
            "src/resources/toy_pool.c",
            f'status = cmr_ref_check(upstream, "{fn}: upstream");',
            # size_t: the default when not set, else each constraint on the value
            "cmr_status cmr_toy_pool_resource_create(cmr_resource_ref upstream, cmr_optional_size chunk_size_option, ",
            "  size_t chunk_size = chunk_size_option.value;\n"
            "  if (!chunk_size_option.is_set) {\n    chunk_size = (size_t)65536u;\n  } else {\n",
            f'"{fn}: chunk_size %zu is not a multiple of 256", chunk_size);',
            "  if (chunk_size == 0 || (chunk_size & (chunk_size - 1)) != 0) {",
            f'"{fn}: chunk_size %zu is not a power of two", chunk_size);',
            f'"{fn}: chunk_size %zu is below the minimum 256", chunk_size);',
            f'"{fn}: chunk_size %zu is above the maximum 1073741824", chunk_size);',
            # a named default
            "  if (!maximum_size_option.is_set) {\n    maximum_size = SIZE_MAX;\n",
            f'"{fn}: maximum_size %zu is not a multiple of 256", maximum_size);',
            # the enum's range
            "  if ((int)growth < 0 || (int)growth >= 2) {",
            f'"{fn}: growth %d is not a cmr_toy_pool_growth (0..1)", (int)growth);',
            # an optional int, string, double
            "  int max_chunks = max_chunks_option.value;\n  if (!max_chunks_option.is_set) {\n    max_chunks = 16;\n",
            f'"{fn}: max_chunks %d is below the minimum 1", max_chunks);',
            f'"{fn}: max_chunks %d is above the maximum 1024", max_chunks);',
            f'if (label == NULL) {{ return cmr_error(CMR_ERROR_NULL_POINTER, "{fn}: label is NULL"); }}',
            f'"{fn}: fill_ratio %g is above the maximum 1.0", fill_ratio);',
            # the cross-parameter check, its message escaped for C and printf
            "  if (!(chunk_size <= maximum_size)) {",
            f'"{fn}: chunk_size %zu is larger than maximum_size %zu (\\"100%%\\" of it at most)", '
            "chunk_size, maximum_size);",
            # the retained upstream
            '    .upstream_what = "cmr_toy_pool_resource_create: upstream",',
            "    .retains_upstream = true,",
            "  return cmr_resource_create(&toy_pool_class, upstream, &params, sizeof params, (void **)out);",
            # max_alignment
            "  if (alignment > 4096) {",
        )

    def test_methods_check_their_arguments(self):
        self.assert_has(
            "src/resources/toy_pool.c",
            "cmr_status cmr_toy_pool_resource_trim(cmr_toy_pool_resource *handle, size_t keep_bytes, int keep_chunks) {",
            '"cmr_toy_pool_resource_trim: keep_bytes %zu is not a multiple of 256", keep_bytes);',
            '"cmr_toy_pool_resource_trim: keep_chunks %d is below the minimum 0", keep_chunks);',
            "  cmr_call_begin(); /* the resource stays while it runs, whatever it calls */\n"
            "  status = cmr_toy_pool_impl_trim(((cmr_resource_object *)object)->impl, keep_bytes, keep_chunks);\n"
            "  cmr_call_end();",
            'if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "cmr_toy_pool_resource_label: out is NULL");',
        )

    def test_binding_tests_make_it_and_refuse_each_bad_number(self):
        self.assert_has(
            "tests/python/test_resource_toy_pool.py",
            "def test_toy_pool_with_defaults(host_mr):",
            "    resource.max_chunks()",
            # one value just outside each numeric constraint, the language's exception
            "def test_toy_pool_refuses_chunk_size_multiple_of(host_mr):",
            # made with only what has no default: label is a conformance argument with one
            "        mr.ToyPoolMemoryResource(host_mr, chunk_size=257)",
            "def test_toy_pool_refuses_max_chunks_max(host_mr):")
        self.assert_has(
            "tests/go/resource_toy_pool_test.go",
            "func TestResourceToyPoolWithDefaults(t *testing.T) {",
            "cmr.NewToyPoolResource(upstream, cmr.WithChunkSize(257))",
            "expectStatus(t, err, cmr.ErrInvalidArgument, \"chunk_size (multiple_of)\")")

    def test_expectations_become_tests_in_every_language(self):
        # C: a case of the --expect mode, over the battery's statistics(system)
        self.assert_has(
            "tests/conformance_toy_pool.c",
            "static void expect_takes_a_chunk(cmr_resource_ref upstream, cmr_statistics_resource *counted) {",
            "CMR_INT(3), \"toy\", 0.5, false, &handle)",
            'void *block0 = cmr_battery_expect_block(subject, 1000u, 512u, "takes_a_chunk: steps[0]");',
            'cmr_battery_expect_refused(subject, 1000000000u, CMR_ERROR_OUT_OF_MEMORY, "takes_a_chunk: steps[1]");',
            'ck_assert_msg(strcmp(value, "toy") == 0,',
            "cmr_statistics_resource_allocations_current(counted, &value)",
            'cmr_battery_expect_freed(subject, block0, 1000u, "takes_a_chunk: at the end");',
            '{"takes_a_chunk", expect_takes_a_chunk},')
        self.assert_has(
            "tests/python/test_resource_toy_pool.py",
            "def test_toy_pool_expect_takes_a_chunk(host_mr):",
            "resource = made_or_skip(lambda: mr.ToyPoolMemoryResource(upstream, max_chunks=3, label=\"toy\"))",
            "    with pytest.raises(MemoryError):\n        resource.allocate(1000000000)",
            'assert upstream.allocations_current() == 1, "takes_a_chunk: upstream.allocations_current"')
        self.assert_has(
            "tests/go/resource_toy_pool_test.go",
            "func TestResourceToyPoolExpectTakesAChunk(t *testing.T) {",
            "expectStatus(t, err, cmr.ErrOutOfMemory, \"takes_a_chunk: steps[1]\")",
            "if value, err := r.Label(); err != nil || value != \"toy\" {")
        self.assert_has(
            "tests/java/ToyPoolMemoryResourceTest.java",
            "public void expectTakesAChunk() {",
            'assertThrows("takes_a_chunk: steps[1]", CmrOutOfMemoryError.class, () -> resource.allocate(1000000000L));',
            'assertEquals("takes_a_chunk: upstream.allocations_current", 1L, counted.allocationsCurrent());')
        self.assert_has(
            "tests/csharp/ToyPoolMemoryResourceTests.cs",
            "private void ExpectTakesAChunk()",
            "using (var resource = new ToyPoolMemoryResource(counted, maxChunks: 3, label: \"toy\"))",
            'Assert.Equal(3, resource.MaxChunks, "takes_a_chunk: max_chunks");')
        # C# reads each getter as a read-only property
        self.assert_has(
            "csharp/ToyPoolMemoryResource.cs",
            "public int MaxChunks { get { int result; CmrNative.cmr_toy_pool_resource_max_chunks(Handle, out result);")
        self.assertNotIn("MaxChunks()", self.files["csharp/ToyPoolMemoryResource.cs"])
        # and the ctest list of resources with expectations
        self.assertRegex(self.files["cmake/resources.cmake"], r"set\(CMR_EXPECT_HOST [^)]*\btoy_pool\b")

    def test_stored_getter_is_generated_whole(self):
        fn = "cmr_toy_pool_resource_max_chunks"
        self.assert_has("include/cmr/resources.h", f"CMR_API cmr_status {fn}(cmr_toy_pool_resource *handle, int *out);")
        # read from the parameters at the start of the algorithm's struct
        self.assert_has("src/resources/toy_pool.c",
                        "      .max_chunks = max_chunks,",
                        "static const cmr_toy_pool_params *toy_pool_created_with(const cmr_object *object) {\n"
                        "  return (const cmr_toy_pool_params *)(const void *)((const cmr_resource_object *)object)->impl;",
                        f'if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "{fn}: out is NULL");\n'
                        "  *out = toy_pool_created_with(object)->max_chunks;\n  return CMR_SUCCESS;")
        self.assertNotIn("cmr_toy_pool_impl_max_chunks", self.files["src/impl.h"])
        self.assertNotIn("cmr_toy_pool_impl_max_chunks", self.files["src/resources/toy_pool.c"])

    @unittest.skipUnless(have_cc(), "no C compiler (cc)")
    def test_an_algorithm_struct_begins_with_its_parameters(self):
        # CMR_IMPL_LAYOUT refuses a struct whose first member is not its
        # params: the wrapper copies them to the struct's start.
        includes = [ROOT / "runtime/include", self.out / "include", ROOT / "runtime/src/resource_api", self.out / "src"]
        cases = {"cmr_toy_pool_params params;\n  int own;": "",
                 "int own;\n  cmr_toy_pool_params params;": "struct cmr_toy_pool_impl begins with cmr_toy_pool_params",
                 "size_t params;": "struct cmr_toy_pool_impl begins with cmr_toy_pool_params",
                 "int own;": "has no member named"}
        for members, error in cases.items():
            with self.subTest(members=members):
                source = self.tmp() / "toy_pool.c"
                source.write_text(f'#include "impl.h"\n\nstruct cmr_toy_pool_impl {{\n  {members}\n}};\n'
                                  "CMR_IMPL_LAYOUT(toy_pool);\n", encoding="utf-8")
                done = compile_c(source, includes, ["CMR_WITH_CUDA=0"])
                if error:
                    self.assertNotEqual(done.returncode, 0)
                    self.assertIn(error, done.stderr)
                else:
                    self.assertEqual(done.returncode, 0, done.stderr)

    def test_impl_h_declares_what_the_algorithm_defines(self):
        self.assert_has(
            "src/impl.h",
            "typedef struct cmr_toy_pool_impl cmr_toy_pool_impl;\n",
            # the parameters, resolved, as the struct's first member
            "typedef struct cmr_toy_pool_params {\n  cmr_resource_ref upstream; /* held by the resource */\n"
            "  size_t chunk_size;\n  size_t maximum_size;\n  cmr_toy_pool_growth growth;\n  int max_chunks;\n"
            "  const char *label; /* a copy, freed with the resource */\n  double fill_ratio;\n  bool zero_fill;\n"
            "} cmr_toy_pool_params;",
            "extern const cmr_impl_layout cmr_toy_pool_impl_layout;",
            # its hooks, as the spec lists them
            "cmr_status cmr_toy_pool_impl_init(cmr_toy_pool_impl *impl);\n",
            "void cmr_toy_pool_impl_fini(cmr_toy_pool_impl *impl);\n",
            "cmr_status cmr_toy_pool_impl_stats(cmr_toy_pool_impl *impl, cmr_stats *out, cmr_free_by_stream *spread);\n",
            "cmr_status cmr_toy_pool_impl_reset_peak_stats(cmr_toy_pool_impl *impl);\n",
            "cmr_status cmr_toy_pool_impl_chunk_count(cmr_toy_pool_impl *impl, size_t *out);\n",
            "cmr_status cmr_toy_pool_impl_trim(cmr_toy_pool_impl *impl, size_t keep_bytes, int keep_chunks);\n",
            "cmr_status cmr_toy_pool_impl_label(cmr_toy_pool_impl *impl, const char **out);\n",
        )
        self.assertNotIn("cmr_toy_pool_impl_create", self.files["src/impl.h"])
        self.assertNotIn("cmr_toy_pool_impl_destroy", self.files["src/impl.h"])
        # equality and properties come from the upstream: nothing to define for them
        self.assertNotIn("cmr_toy_pool_impl_is_equal", self.files["src/impl.h"])
        self.assertNotIn("cmr_toy_pool_impl_properties", self.files["src/impl.h"])

    def test_the_class_hands_each_call_to_the_algorithm_and_names_its_stats_hooks(self):
        # Dispatch counts every call (usage.h): the ops functions are the algorithm's alone.
        self.assert_has(
            "src/resources/toy_pool.c",
            "  return cmr_toy_pool_impl_allocate(((cmr_resource_object *)self)->impl, bytes, alignment, stream, out);\n",
            "  return cmr_toy_pool_impl_deallocate(((cmr_resource_object *)self)->impl, ptr, bytes, alignment, stream);\n",
            "    .stats = toy_pool_stats,\n    .reset_peak_stats = toy_pool_reset_peak_stats,\n",
            "    .memory = CMR_MEMORY_OWN,\n",
        )

    def test_public_header(self):
        self.assert_has(
            "include/cmr/resources.h",
            "typedef enum cmr_toy_pool_growth {\n  CMR_TOY_POOL_GROWTH_LINEAR = 0,\n"
            "  CMR_TOY_POOL_GROWTH_DOUBLING = 1\n} cmr_toy_pool_growth;\n",
            " *   chunk_size: Bytes asked of the upstream at a time. Default: 65536 (pass CMR_SIZE_DEFAULT).\n",
            "CMR_API cmr_status cmr_toy_pool_resource_create(cmr_resource_ref upstream, cmr_optional_size chunk_size, "
            "cmr_optional_size maximum_size, cmr_toy_pool_growth growth, cmr_optional_int max_chunks, "
            "const char *label, double fill_ratio, "
            "bool zero_fill, cmr_toy_pool_resource **out);\n",
            "CMR_API cmr_status cmr_toy_pool_resource_chunk_count(cmr_toy_pool_resource *handle, size_t *out);\n",
        )

    def test_cmake_lists_and_conformance_test(self):
        cmake = self.files["cmake/resources.cmake"]
        self.assertRegex(cmake, r"set\(CMR_HOST_RESOURCES [^)]*\btoy_pool\b[^)]*\)")
        self.assertRegex(cmake, r"set\(CMR_CUDA_RESOURCES [^)]*\btoy_pool\b[^)]*\)")
        self.assertRegex(cmake, r"set\(CMR_CONFORMANCE_HOST\n(    .*\n)*    toy_pool:system\n")
        self.assertRegex(cmake, r"set\(CMR_CONFORMANCE_GPU\n(    .*\n)*    toy_pool:cuda\n")
        self.assert_has(
            "tests/conformance_toy_pool.c",
            " * Usage: conformance_toy_pool [--bad-inputs] <upstream: system | cuda>,\n"
            " * or conformance_toy_pool --expect for the spec's expectations. */",
            "cmr_toy_pool_resource_create(upstream, CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_TOY_POOL_GROWTH_DOUBLING, "
            'CMR_INT_DEFAULT, "conformance", 0.5, false, &handle);',
            ".properties_rule = CMR_BATTERY_PROPERTIES_UPSTREAM,",
            ".max_alignment = 4096,",
        )

    def test_bad_input_matrix_has_a_case_per_function_and_bad_argument(self):
        conformance = self.files["tests/conformance_toy_pool.c"]
        cases = [line.split('"')[1] for line in conformance.splitlines() if line.startswith('    {"')]
        self.assertEqual(cases, [
            "create.null_out", "create.upstream.zeroed_ref", "create.upstream.destroyed_ref",
            "create.chunk_size.multiple_of", "create.chunk_size.power_of_two", "create.chunk_size.min",
            "create.chunk_size.max", "create.chunk_size.size_max", "create.maximum_size.multiple_of",
            "create.maximum_size.size_max", "create.growth.enum_below", "create.growth.enum_above",
            "create.max_chunks.min", "create.max_chunks.max", "create.max_chunks.int_min", "create.label.null",
            "create.fill_ratio.min", "create.fill_ratio.max",
            "destroy.null_handle", "destroy.destroyed_handle", "destroy.not_a_handle", "ref.destroyed_handle",
            "ref.null_handle",
            "from_ref.null_out", "from_ref.zeroed_ref", "from_ref.destroyed_ref", "from_ref.other_type",
            "max_chunks.null_handle", "max_chunks.destroyed_handle", "max_chunks.null_out",
            "chunk_count.null_handle", "chunk_count.destroyed_handle", "chunk_count.null_out",
            "trim.null_handle", "trim.destroyed_handle", "trim.keep_bytes.multiple_of", "trim.keep_chunks.min",
            "label.null_handle", "label.destroyed_handle", "label.null_out",
        ])
        create = "cmr_toy_pool_resource_create"
        args = 'CMR_TOY_POOL_GROWTH_DOUBLING, CMR_INT_DEFAULT, "conformance", 0.5, false'
        self.assert_has(
            "tests/conformance_toy_pool.c",
            # each value just outside its constraint, the status and the name the message must carry
            f"{create}((cmr_resource_ref){{0}}, CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, {args}, &out), "
            f'CMR_ERROR_INVALID_REF, "{create}: upstream");',
            f"{create}(upstream, CMR_SIZE((size_t)768u), CMR_SIZE_DEFAULT, {args}, &out), "
            f'CMR_ERROR_INVALID_ARGUMENT, "{create}: chunk_size");',
            f"{create}(upstream, CMR_SIZE((size_t)1073742080u), CMR_SIZE_DEFAULT, {args}, &out)",
            # the far end, which once stood for the default, is a value the checks refuse
            f"{create}(upstream, CMR_SIZE(SIZE_MAX), CMR_SIZE_DEFAULT, {args}, &out), "
            f'CMR_ERROR_INVALID_ARGUMENT, "{create}: chunk_size");',
            f'{create}(upstream, CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_TOY_POOL_GROWTH_DOUBLING, CMR_INT(INT32_MIN), ',
            f"{create}(upstream, CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, (cmr_toy_pool_growth)2, ",
            f'{create}(upstream, CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_TOY_POOL_GROWTH_DOUBLING, CMR_INT(1025), '
            '"conformance"',
            f'CMR_INT_DEFAULT, NULL, 0.5, false, &out), CMR_ERROR_NULL_POINTER, "{create}: label");',
            f'"conformance", -1.0, false, &out), CMR_ERROR_INVALID_ARGUMENT, "{create}: fill_ratio");',
            f'cmr_battery_expect_null(out, "{create}");',
            # methods: the other arguments valid, the handle the live subject
            "cmr_toy_pool_resource_trim(handle_of(subject), (size_t)4096u, -1), CMR_ERROR_INVALID_ARGUMENT, "
            '"cmr_toy_pool_resource_trim: keep_chunks");',
            "cmr_toy_pool_resource_label(destroyed_handle(subject), &out), CMR_ERROR_DESTROYED_HANDLE, ",
            # the getters, read before and after every case
            "cmr_battery_expect_ok(cmr_toy_pool_resource_chunk_count(handle, &chunk_count), ",
            "enum { observed_count = 2 };",
            ".bad_inputs = bad_inputs,",
            ".rejects_unknown_pointer = false,",
        )

    def test_docs(self):
        self.assert_has(
            "docs/api.md",
            "| [`toy_pool`](#toy_pool) | suballocator | cuda, host | from upstream | no | up to 4096 |",
            "| `chunk_size` | `cmr_optional_size` | 65536 | multiple_of 256, power_of_two, min 256, max 1073741824 |",
            "| `growth` | `cmr_toy_pool_growth` | doubling | one of linear, doubling |",
            "- Check: `chunk_size <= maximum_size` — otherwise",
        )

    def test_stack_table_describes_every_parameter(self):
        self.assert_has(
            "src/stack_table.c",
            'static const char *const toy_pool_growth_values[] = {"linear", "doubling"};',
            '{"upstream", CMR_STACK_RESOURCE, NULL, 0, NULL, {.pointer = NULL}},',
            '{"chunk_size", CMR_STACK_SIZE, NULL, 0, "65536", {.size = {.is_set = false}}},',
            '{"maximum_size", CMR_STACK_SIZE, NULL, 0, "unlimited", {.size = {.is_set = false}}},',
            '{"growth", CMR_STACK_ENUM, toy_pool_growth_values, 2, "doubling", '
            '{.enumeration = CMR_TOY_POOL_GROWTH_DOUBLING}},',
            '{"max_chunks", CMR_STACK_INT, NULL, 0, "16", {.integer = {.is_set = false}}},',
            '{"label", CMR_STACK_STRING, NULL, 0, "\\"toy \\\\\\"pool\\\\\\"\\"", {.string = "toy \\"pool\\""}},',
            '{"fill_ratio", CMR_STACK_DOUBLE, NULL, 0, "0.5", {.real = 0.5}},',
            '{"zero_fill", CMR_STACK_BOOL, NULL, 0, "false", {.boolean = false}},',
            "cmr_toy_pool_resource_create(values[0].ref, values[1].size, values[2].size, "
            "(cmr_toy_pool_growth)values[3].enumeration, values[4].integer, values[5].string, values[6].real, "
            "values[7].boolean, &handle);",
            '{"toy_pool", toy_pool_params, 8, toy_pool_make},',
        )

    @unittest.skipUnless(have_cc(), "no C compiler (cc)")
    def test_generated_c_compiles(self):
        # The toy in each set of builds: both (no guard), CUDA only and host
        # only (guarded: the other build compiles the unavailable stubs).
        text = TOY.read_text(encoding="utf-8")
        both = 'backends = ["cuda", "host"]'
        self.assertIn(both, text)
        for backends in ('["cuda", "host"]', '["cuda"]', '["host"]'):
            spec = self.spec_dir(real_spec=True)
            (spec / TOY.name).write_text(text.replace(both, f"backends = {backends}"), encoding="utf-8")
            out = spec.parent / "out"
            _render(spec, out)
            for with_cuda in ("0", "1"):
                includes = [ROOT / "runtime/include", out / "include", ROOT / "runtime/src/resource_api", out / "src",
                            ROOT / "tests/c"]
                for source in (out / "src/resources/toy_pool.c", out / "src/stack_table.c", out / "tests/conformance_toy_pool.c"):
                    with self.subTest(backends=backends, CMR_WITH_CUDA=with_cuda, source=source.name):
                        done = compile_c(source, includes, [f"CMR_WITH_CUDA={with_cuda}"])
                        self.assertEqual(done.returncode, 0, done.stderr)


class FailureCallbackParameter(GeneratorTestCase):
    """good_specs/toy_retry.toml: a failure_callback parameter, never NULL."""

    @classmethod
    def setUpClass(cls):
        spec = make_spec_dir(cls.class_tmp(), RETRY, real_spec=True)
        cls.out = spec.parent / "out"
        cls.files = {**_render(spec, cls.out), **render_go_module(load_specs(spec))}

    def test_an_adaptor_without_a_stats_hook_reports_its_upstreams_memory(self):
        self.assertIn("    .memory = CMR_MEMORY_OF_UPSTREAM,\n", self.files["src/resources/toy_retry.c"])
        self.assertNotIn(".stats =", self.files["src/resources/toy_retry.c"])

    def test_create_takes_the_callback_and_refuses_null(self):
        fn = "cmr_toy_retry_resource_create"
        self.assert_has("include/cmr/resources.h",
                        f"CMR_API cmr_status {fn}(cmr_resource_ref upstream, cmr_failure_callback on_failure, "
                        "void *on_failure_arg, cmr_toy_retry_resource **out);")
        self.assert_has("src/resources/toy_retry.c",
                        f'if (on_failure == NULL) {{ return cmr_error(CMR_ERROR_NULL_POINTER, "{fn}: on_failure is NULL"); }}')
        self.assert_has("src/impl.h",
                        "typedef struct cmr_toy_retry_params { cmr_resource_ref upstream; /* held by the resource */ "
                        "cmr_failure_callback on_failure; void *on_failure_arg; } cmr_toy_retry_params;")
        # no hooks in its spec: nothing to set up beyond the parameters
        self.assertNotIn("cmr_toy_retry_impl_init", self.files["src/impl.h"])
        self.assertNotIn("cmr_toy_retry_impl_fini", self.files["src/impl.h"])

    def test_bad_input_matrix_passes_null_for_the_callback(self):
        self.assert_has("tests/conformance_toy_retry.c",
                        'cmr_toy_retry_resource_create(upstream, NULL, NULL, &out), CMR_ERROR_NULL_POINTER, '
                        '"cmr_toy_retry_resource_create: on_failure");',
                        '{"create.on_failure.null", bad_create_on_failure_null},')

    def test_every_binding_makes_it_over_a_function_of_its_own(self):
        # The SWIG interfaces: the create function over the type's trampoline,
        # taking what stands for the language's function as the callback's argument.
        for language, prefix, holder in (("python", "py", "PyObject *"), ("java", "java", "cmr_java_callback *"),
                                         ("go", "go", "void *")):
            with self.subTest(language=language):
                self.assertIn(f"static cmr_status cmr_{prefix}_toy_retry_resource_create(cmr_resource_ref upstream, "
                              f"{holder}on_failure, cmr_toy_retry_resource **out) {{\n"
                              f"  return cmr_toy_retry_resource_create(upstream, cmr_{prefix}_failure_trampoline, "
                              "on_failure, out);", self.files["go/internal/capi/swig/capi.swig" if language == "go" else f"swig/cmr_{language}.i"])
        mr = self.files["python/cmr/mr.py"]
        self.assertIn("class ToyRetryResourceAdaptor(UpstreamResourceAdaptor):", mr)
        self.assertIn("on_failure_native = _args.failure_callback(on_failure, \"on_failure\")", mr)
        self.assertIn("def __init__(self, upstream_mr, on_failure):", mr)
        self.assertIn("func NewToyRetryResource(upstream Resource, onFailure func(bytes uint64) bool) "
                      "(*ToyRetryResource, error) {", self.files["go/cmr/resources_generated.go"])
        self.assertIn("return capi.Cmr_go_toy_retry_resource_create(upstreamRef, id, handle)",
                      self.files["go/cmr/resources_generated.go"])
        self.assertIn("public ToyRetryResourceAdaptor(MemoryResource upstream, FailureCallback onFailure) {",
                      self.files["java/org/cmr/ToyRetryResourceAdaptor.java"])
        self.assertIn("public ToyRetryResourceAdaptor(MemoryResource upstream, FailureCallback onFailure)",
                      self.files["csharp/ToyRetryResourceAdaptor.cs"])
        # and the binding tests make it with a function that never retries
        self.assertIn("mr.ToyRetryResourceAdaptor(host_mr, on_failure=lambda n: False)",
                      self.files["tests/python/test_resource_toy_retry.py"])

    @unittest.skipUnless(have_cc(), "no C compiler (cc)")
    def test_generated_c_compiles(self):
        includes = [ROOT / "runtime/include", self.out / "include", ROOT / "runtime/src/resource_api", self.out / "src",
                    ROOT / "tests/c"]
        for with_cuda in ("0", "1"):
            for source in ("src/resources/toy_retry.c", "tests/conformance_toy_retry.c"):
                with self.subTest(CMR_WITH_CUDA=with_cuda, source=source):
                    done = compile_c(self.out / source, includes, [f"CMR_WITH_CUDA={with_cuda}"])
                    self.assertEqual(done.returncode, 0, done.stderr)


if __name__ == "__main__":
    unittest.main()
