# SPDX-License-Identifier: Apache-2.0
"""Load and validate spec/*.toml. Every problem becomes one line of the form
`spec/pool.toml: params[1].type: unknown type "sizet"`; nothing here raises
past load_specs except SpecError, which carries all of them."""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

from .model import (ALWAYS_NONZERO, COMPARABLE, EXPECT_UPSTREAM, POINTEES, STATUSES, STEP_KINDS, Python, BACKENDS,
                    CONFORMANCE_CASES, EQUALITY_RULES, KINDS, REJECTS, NAMED_DEFAULTS, PROPERTY_FLAGS, TYPES, Check,
                    Conformance, Expectation, Method, NamedDefault, Param, Reading, Resource, Step, c_string, literal)

IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")
# Names the generated C would collide with (C keywords and the wrapper's own locals).
RESERVED = {"out", "handle", "status", "impl", "self", "bytes", "alignment", "stream", "ptr",
            "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
            "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
            "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
            "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool"}

TOP_FIELDS = {"name", "kind", "doc", "properties", "thread_safe", "backends", "equality",
              "max_alignment", "state", "hooks", "params", "checks", "methods", "method_sets", "conformance", "python",
              "expect"}
PARAM_FIELDS = {"name", "type", "doc", "default", "multiple_of", "power_of_two", "min", "max",
                "nonzero", "retain", "values", "pointee"}
METHOD_FIELDS = {"name", "doc", "returns", "params", "stored", "counter", "changes", "hands_out"}
# Types a method may return as a stored parameter (`stored = "<param>"`): plain
# values the generated wrapper keeps beside the handle, no copies to own.
STORABLE = ("size_t", "int", "bool", "double", "pointer", "properties")
# The algorithm's own set-up and tear-down of its struct (spec: hooks), beyond
# the parameters the generated wrapper copies into it, its statistics, and
# the walk of its segments for snapshots (runtime/src/resource_api/segments.h),
# and the export records of a pool shared between processes
# (runtime/src/resource_api/ipc_records.h).
HOOKS = ("init", "fini", "stats", "segments", "export_records")
CHECK_FIELDS = {"expr", "message"}
CONFORMANCE_FIELDS = {"upstreams", "args", "skip", "rejects", "environment"}
ENVIRONMENT_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
PYTHON_FIELDS = {"class", "names", "aliases", "hidden", "extends", "replaced"}
EXPECT_FIELDS = {"name", "doc", "args", "steps"}
# What each step kind may say besides its own key.
STEP_FIELDS = {"allocate": {"fails", "aligned_to"}, "deallocate": set(), "call": {"with"}, "equals": set()}
# The parameter types an expectation's args may give: plain values every
# language writes the same way (model.literal).
EXPECT_ARG_TYPES = ("size_t", "int", "double", "bool", "string")
# Java's long holds what a size may be in every language.
LARGEST_SIZE = 2**63 - 1
PYTHON_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
UPSTREAM_KINDS = {"host", "gpu"}
CONSTRAINT_FIELDS = {"multiple_of", "power_of_two", "min", "max", "nonzero"}

# Keywords of the languages the bindings are written in: a parameter or
# method of that name would not compile there (Java and C# use the names as
# they are; Go and Python as locals and keywords).
BINDING_KEYWORDS = {
    "Java": {"abstract", "assert", "boolean", "byte", "catch", "class", "extends", "final", "finally", "float",
             "implements", "import", "instanceof", "interface", "native", "new", "package", "private", "protected",
             "public", "super", "synchronized", "this", "throw", "throws", "transient", "try", "null", "true",
             "false", "strictfp"},
    "C#": {"as", "base", "byte", "catch", "checked", "class", "decimal", "delegate", "event", "explicit", "false",
           "finally", "fixed", "float", "foreach", "implicit", "in", "interface", "internal", "is", "lock",
           "namespace", "new", "null", "object", "operator", "override", "params", "private", "protected",
           "public", "readonly", "ref", "sbyte", "sealed", "stackalloc", "string", "this", "throw", "true", "try",
           "typeof", "uint", "ulong", "unchecked", "unsafe", "ushort", "using", "virtual"},
    "Go": {"chan", "defer", "fallthrough", "func", "go", "import", "interface", "map", "package", "range", "select",
           "type", "var"},
    "Python": {"and", "as", "assert", "async", "await", "class", "def", "del", "elif", "except", "finally", "from",
               "global", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "try", "with",
               "yield"},
}


class SpecError(Exception):
    def __init__(self, problems):
        super().__init__("\n".join(problems))
        self.problems = problems


class _Problems:
    def __init__(self, source):
        self.source = source
        self.lines = []

    def add(self, where, what):
        self.lines.append(f"{self.source}: {where}: {what}")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


# How TOML calls the Python types tomllib produces, for messages.
_TOML_TYPES = ((bool, "a boolean (true or false)"), (int, "an integer"), (float, "a float"),
               (str, "a string"), (list, "an array"), (dict, "a table"))


def _toml_type(kind):
    """`kind` (a type or a tuple of types) as TOML names it: "a string or an array"."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(name for t, name in _TOML_TYPES if t in kinds)


def _toml_type_of(value):
    return next((name for t, name in _TOML_TYPES if isinstance(value, t)), "a date or time")


def _check_fields(table, allowed, where, problems):
    for key in table:
        if key not in allowed:
            problems.add(f"{where}{key}" if where else key, f'unknown field "{key}"')


def _require(table, key, kind, where, problems):
    if key not in table:
        problems.add(f"{where}{key}", "missing")
        return None
    value = table[key]
    if kind is int and not _is_int(value) or kind is not int and not isinstance(value, kind):
        problems.add(f"{where}{key}", f"must be {_toml_type(kind)}, not {_toml_type_of(value)}")
        return None
    return value


def _identifier(value, where, problems, binding_name=False):
    """A lower-case identifier the generated C can use; a `binding_name` (a
    parameter's or method's, used as it is by the bindings) must also be no
    keyword of theirs."""
    if value is None:
        return None
    if not IDENTIFIER.match(value):
        problems.add(where, f'"{value}" is not a lower-case identifier')
        return None
    if value in RESERVED:
        problems.add(where, f'"{value}" is reserved in the generated C')
        return None
    languages = [language for language, words in BINDING_KEYWORDS.items() if value in words]
    if binding_name and languages:
        problems.add(where, f'"{value}" is a keyword of {" and ".join(languages)}: the generated binding would not compile')
        return None
    return value


def _show(value):
    """A TOML value as the spec writes it, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_show(v)}" for k, v in value.items()) + "}"
    return str(value)


INT_RANGE = (-2**31, 2**31 - 1)  # what a C int holds everywhere cmr builds
# The default of a parameter whose given default was rejected: not None, so
# that no follow-on "needs a value" problem is reported for it.
_REJECTED_DEFAULT = object()


def _valid_default(param, raw):
    t = param.type.name
    if t == "size_t":
        return _is_int(raw) and raw >= 0
    if t == "int":
        return _is_int(raw) and INT_RANGE[0] <= raw <= INT_RANGE[1]
    if t == "bool":
        return isinstance(raw, bool)
    if t == "double":
        return (_is_int(raw) or isinstance(raw, float)) and math.isfinite(raw)
    if t == "pointer":
        return raw == "null"
    if t == "string":
        return isinstance(raw, str)
    if t == "enum":
        return isinstance(raw, str) and raw in param.values
    if t == "properties":
        return isinstance(raw, list) and all(isinstance(f, str) and f in PROPERTY_FLAGS for f in raw)
    return False


def _load_default(param, raw, where, problems):
    t = param.type.name
    if isinstance(raw, str) and raw in NAMED_DEFAULTS:
        named = NAMED_DEFAULTS[raw]
        if t not in named.types:
            problems.add(where, f'named default "{raw}" does not apply to type "{t}"')
            param.default = _REJECTED_DEFAULT
            return
        param.default, param.default_text = named, named.doc
        return
    if not _valid_default(param, raw):
        hint = {"enum": "one of " + ", ".join(_show(v) for v in param.values),
                "pointer": '"null"',
                "properties": "an array of " + ", ".join(_show(f) for f in PROPERTY_FLAGS),
                "size_t": "a non-negative integer or one of " + ", ".join(_show(n) for n in NAMED_DEFAULTS),
                "int": f"an integer in [{INT_RANGE[0]}, {INT_RANGE[1]}]",
                "double": "a finite number",
                "bool": "true or false"}.get(t, f"a {t}")
        problems.add(where, f'{_show(raw)} is not a valid default for type "{t}" (expected {hint})')
        param.default = _REJECTED_DEFAULT
        return
    param.default = raw
    param.default_text = ", ".join(raw) if t == "properties" else str(raw).lower() if t == "bool" else str(raw)


def _check_constraints(param, where, problems):
    """The constraint values themselves, then a literal default against them."""
    c, t = param.constraints, param.type.name
    for key in ("multiple_of", "min", "max"):
        if key not in c:
            continue
        value = c[key]
        if not (_is_int(value) or t == "double" and isinstance(value, float) and math.isfinite(value)):
            problems.add(f"{where}{key}", f"must be {'a finite number' if t == 'double' else 'an integer'}, "
                                          f"not {_show(value)}")
            return
        if t == "size_t" and value < 0:
            problems.add(f"{where}{key}", f"must not be negative for a size_t, not {value}")
            return
        if t == "int" and not INT_RANGE[0] <= value <= INT_RANGE[1]:
            problems.add(f"{where}{key}", f"{value} does not fit in an int")
            return
    for key in ("power_of_two", "nonzero"):
        if key in c and not isinstance(c[key], bool):
            problems.add(f"{where}{key}", f"must be true or false, not {_show(c[key])}")
            return
    if "multiple_of" in c and c["multiple_of"] <= 0:
        problems.add(f"{where}multiple_of", f"must be positive, not {c['multiple_of']}")
        return
    if "min" in c and "max" in c and c["min"] > c["max"]:
        problems.add(f"{where}min", f"min {c['min']} is greater than max {c['max']}")
    d = param.default
    if c.get("nonzero") and t == "pointer" and d == "null":
        problems.add(f"{where}default", '"null" breaks nonzero = true')
    if _is_int(d) and t in ("size_t", "int"):
        if "multiple_of" in c and d % c["multiple_of"]:
            problems.add(f"{where}default", f"{d} is not a multiple of {c['multiple_of']}")
        if c.get("power_of_two") and (d <= 0 or d & (d - 1)):
            problems.add(f"{where}default", f"{d} is not a power of two")
        if c.get("nonzero") and d == 0:
            problems.add(f"{where}default", "0 breaks nonzero = true")
    if isinstance(d, (int, float)) and not isinstance(d, bool) and t in ("size_t", "int", "double"):
        if "min" in c and d < c["min"] or "max" in c and d > c["max"]:
            problems.add(f"{where}default", f"{d} is outside [{c.get('min', '-inf')}, {c.get('max', 'inf')}]")


def _load_param(raw, resource, where, problems, allow_default=True):
    """A Param, or None when it is too broken to build on. Every problem is
    reported either way, also those after a bad name."""
    if not isinstance(raw, dict):
        problems.add(where.rstrip("."), "must be a table")
        return None
    _check_fields(raw, PARAM_FIELDS, where, problems)
    name = _identifier(_require(raw, "name", str, where, problems), f"{where}name", problems, binding_name=True)
    type_name = _require(raw, "type", str, where, problems)
    doc = _require(raw, "doc", str, where, problems) or ""
    if type_name is None:
        return None
    if type_name not in TYPES:
        problems.add(f"{where}type", f'unknown type "{type_name}"')
        return None
    if type_name == "enum" and not allow_default:
        problems.add(f"{where}type", "an enum is a constructor parameter only")
        return None
    ctype = TYPES[type_name]
    constraints = {}
    for key in [k for k in raw if k in CONSTRAINT_FIELDS]:  # in file order: docs list them so
        if key in ctype.constraints:
            constraints[key] = raw[key]
        else:
            problems.add(f"{where}{key}", f'does not apply to type "{type_name}"')
    if type_name in ALWAYS_NONZERO:
        constraints["nonzero"] = True
    values = raw.get("values", [])
    if type_name == "enum":
        if not (isinstance(values, list) and values and all(isinstance(v, str) for v in values)):
            problems.add(f"{where}values", "an enum needs a non-empty array of value names")
            values = []
        else:
            for i, v in enumerate(values):
                _identifier(v, f"{where}values[{i}]", problems)
            if len(set(values)) != len(values):
                problems.add(f"{where}values", "names repeat")
    elif "values" in raw:
        problems.add(f"{where}values", f'does not apply to type "{type_name}"')
    retain = raw.get("retain", False)
    if "retain" in raw and (type_name != "resource_ref" or not isinstance(retain, bool)):
        problems.add(f"{where}retain", "applies to resource_ref parameters only, as true or false")
    pointee = raw.get("pointee")
    if "pointee" in raw and (type_name != "pointer" or pointee not in POINTEES):
        problems.add(f"{where}pointee", f"applies to pointer parameters only, as one of {sorted(POINTEES)}")
        pointee = None
    param = Param(name=name or "_", type=ctype, doc=doc, resource=resource, constraints=constraints,
                  values=values, retain=bool(retain), pointee=pointee)
    if "default" in raw:
        if not allow_default:
            problems.add(f"{where}default", "method parameters take no defaults")
        elif type_name == "resource_ref":
            problems.add(f"{where}default", "a resource_ref has no default")
        else:
            _load_default(param, raw["default"], f"{where}default", problems)
    _check_constraints(param, where, problems)
    return param if name is not None else None


def _load_params(raw, resource, where, problems, allow_default=True):
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.add(where, "must be an array of tables ([[...]])")
        return []
    params, seen = [], set()
    for i, item in enumerate(raw):
        p = _load_param(item, resource, f"{where}[{i}].", problems, allow_default)
        if p is None:
            continue
        if p.name in seen:
            problems.add(f"{where}[{i}].name", f'"{p.name}" repeats')
            continue
        seen.add(p.name)
        params.append(p)
    return params


def _tables(raw, key, problems):
    """Each table of the array of tables `key` ([[key]]) with where it is
    ("key[i]."); reports a value that is no array, and an element that is no table."""
    if raw is None:
        return
    if not isinstance(raw, list):
        problems.add(key, f"must be an array of tables ([[{key}]])")
        return
    for i, item in enumerate(raw):
        if isinstance(item, dict):
            yield f"{key}[{i}].", item
        else:
            problems.add(f"{key}[{i}]", "must be a table")


def _load_checks(raw, params, problems):
    names = {p.name: p for p in params}
    checks = []
    for where, item in _tables(raw, "checks", problems):
        _check_fields(item, CHECK_FIELDS, where, problems)
        expr = _require(item, "expr", str, where, problems)
        message = _require(item, "message", str, where, problems)
        if expr is None or message is None:
            continue
        if not expr.strip():
            problems.add(f"{where}expr", "is empty")
        # Identifiers, skipping number literals (and their suffixes: 256u, 0x100).
        for ident in dict.fromkeys(re.findall(r"\b\d\w*|([A-Za-z_]\w*)", expr)):
            if ident and ident not in names and not ident.isupper() and ident not in ("true", "false"):
                problems.add(f"{where}expr", f'"{ident}" is not a parameter')
        fmt, args = [], []
        # Alternating literal text and {field} names.
        for j, part in enumerate(re.split(r"\{([^{}]*)\}", message)):
            if j % 2 == 0:
                fmt.append(c_string(part).replace("%", "%%"))
                continue
            p = names.get(part)
            if p is None or p.type.printf is None:
                problems.add(f"{where}message", f'"{{{part}}}" is not a printable parameter')
                continue
            fmt.append(p.type.printf)
            args.append(p.type.printf_arg(p.name))
        checks.append(Check(expr=expr, message=message, printf_message="".join(fmt), printf_args=args))
    return checks


def _load_stored(item, params, rtype, where, problems):
    """methods[i].stored: the creation parameter a getter returns, as the
    wrapper resolved it; the generated C keeps it and defines the getter."""
    stored = item.get("stored")
    if stored is None:
        return None
    by_name = {p.name: p for p in params}
    if not isinstance(stored, str) or stored not in by_name:
        problems.add(f"{where}stored", f"{_show(stored)} is not a parameter of the resource "
                                       f"(known: {', '.join(by_name) or 'none'})")
        return None
    param = by_name[stored]
    if param.type.name not in STORABLE:
        problems.add(f"{where}stored", f'"{stored}" is a {param.type.name}, which cannot be stored '
                                       f"(storable: {', '.join(STORABLE)})")
        return None
    if "returns" in item and (rtype is None or rtype.name != param.type.name):
        problems.add(f"{where}returns", f'must be "{param.type.name}", the type of the stored "{stored}" '
                                        "(or left out)")
        return None
    if item.get("params"):
        problems.add(f"{where}params", "a stored getter takes no parameters")
        return None
    return param


def _load_counter(item, rtype, where, problems):
    """methods[i].counter: the field of the algorithm's struct a getter
    reads (an `_Atomic size_t`, or such a member of a struct field: a.b);
    the generated C defines the getter."""
    counter = item.get("counter")
    if counter is None:
        return None
    if not isinstance(counter, str) or not all(part.isidentifier() for part in counter.split(".")):
        problems.add(f"{where}counter", f"{_show(counter)} is not a C field name (or a member of one, a.b)")
        return None
    if "stored" in item:
        problems.add(f"{where}counter", "a getter is either stored or a counter, not both")
        return None
    if "returns" in item and (rtype is None or rtype.name != "size_t"):
        problems.add(f"{where}returns", 'must be "size_t", the type of a counter (or left out)')
        return None
    if item.get("params"):
        problems.add(f"{where}params", "a counter getter takes no parameters")
        return None
    return counter


def _load_methods(raw, resource, problems, params=()):
    methods, seen = [], set()
    for where, item in _tables(raw, "methods", problems):
        _check_fields(item, METHOD_FIELDS, where, problems)
        name = _identifier(_require(item, "name", str, where, problems), f"{where}name", problems, binding_name=True)
        doc = _require(item, "doc", str, where, problems) or ""
        returns = item.get("returns", "void")
        rtype = None
        if ("stored" in item or "counter" in item) and "returns" not in item:
            returns = None
        elif returns != "void":
            rtype = TYPES.get(returns) if isinstance(returns, str) and returns != "enum" else None
            if rtype is None or not rtype.returnable:
                returnable = [t for t, ct in TYPES.items() if ct.returnable and t != "enum"]
                problems.add(f"{where}returns", f"{_show(returns)} cannot be returned "
                                                f"(known: void, {', '.join(returnable)})")
        method_params = _load_params(item.get("params"), resource, f"{where}params", problems, allow_default=False)
        stored = _load_stored(item, params, rtype, where, problems)
        if stored is not None:
            rtype = stored.type
        counter = _load_counter(item, rtype, where, problems)
        if counter is not None:
            rtype = TYPES["size_t"]
        changes, hands_out = (_method_flag(item, key, stored, counter, where, problems) for key in ("changes", "hands_out"))
        if name in ("create", "destroy", "ref", "from_ref"):
            problems.add(f"{where}name", f'"{name}" is generated for every resource')
        elif name in seen:
            problems.add(f"{where}name", f'"{name}" repeats')
        elif name:
            seen.add(name)
            methods.append(Method(name=name, doc=doc, returns=rtype, params=method_params, stored=stored,
                                  counter=counter, changes=changes, hands_out=hands_out))
    return methods


def _method_flag(item, key, stored, counter, where, problems) -> bool:
    """A method's true-or-false `key` (changes, hands_out): false unless
    given, and never on a stored or counter getter, which only reads."""
    value = item.get(key, False)
    if not isinstance(value, bool):
        problems.add(f"{where}{key}", f"{_show(value)} is not true or false")
        return False
    if value and (stored is not None or counter is not None):
        problems.add(f"{where}{key}", "a stored or counter getter only reads")
    return value


def _names(raw, key, known, noun, problems) -> list:
    """conformance.<key>: a list of names, each one of `known`."""
    names = raw.get(key, [])
    if not isinstance(names, list):
        problems.add(f"conformance.{key}", f"must be a list of {noun} names")
        return []
    for name in names:
        if name not in known:
            problems.add(f"conformance.{key}", f'unknown {noun} {_show(name)} (known: {", ".join(known)})')
    return names


def _load_conformance(raw, params, problems, known_resources):
    conf = Conformance()
    if raw is None:
        return conf
    if not isinstance(raw, dict):
        problems.add("conformance", "must be a table")
        return conf
    _check_fields(raw, CONFORMANCE_FIELDS, "conformance.", problems)
    upstreams = raw.get("upstreams", {})
    if not isinstance(upstreams, dict):
        problems.add("conformance.upstreams", "must be a table like { host = [...], gpu = [...] }")
        upstreams = {}
    for key, names in upstreams.items():
        if key not in UPSTREAM_KINDS:
            problems.add(f"conformance.upstreams.{key}", 'must be "host" or "gpu"')
            continue
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            problems.add(f"conformance.upstreams.{key}", "must be a list of resource names")
            continue
        for n in names:
            if n not in known_resources:
                problems.add(f"conformance.upstreams.{key}", f'"{n}" is not a resource in spec/')
        setattr(conf, f"upstreams_{key}", names)
    args = raw.get("args", {})
    if not isinstance(args, dict) or not all(isinstance(v, str) for v in args.values()):
        problems.add("conformance.args", "must be a table of parameter = \"C expression\"")
        args = {}
    names = {p.name for p in params}
    for key, expr in args.items():
        if key not in names:
            problems.add(f"conformance.args.{key}", "is not a parameter")
        elif not expr.strip():
            problems.add(f"conformance.args.{key}", "is empty")
    conf.args = args
    environment = raw.get("environment", {})
    if not isinstance(environment, dict):
        problems.add("conformance.environment", 'must be a table of NAME = "value"')
        environment = {}
    for key, value in environment.items():
        if not ENVIRONMENT_NAME.match(key):
            problems.add(f"conformance.environment.{key}", "is not an upper-case environment variable name")
        elif not isinstance(value, str) or ";" in value:
            problems.add(f"conformance.environment.{key}", f"{_show(value)} must be a string without ';'")
        else:
            conf.environment[key] = value
    conf.skip = _names(raw, "skip", CONFORMANCE_CASES, "case", problems)
    conf.rejects = _names(raw, "rejects", REJECTS, "refusal", problems)
    return conf


def _python_names(raw, key, known, noun, problems) -> dict:
    """python.<key>: a table of known name = Python identifier."""
    table = raw.get(key, {})
    if not isinstance(table, dict):
        problems.add(f"python.{key}", f"must be a table of {noun} = \"python_name\"")
        return {}
    for name, alias in table.items():
        if name not in known:
            problems.add(f"python.{key}.{name}", f"is not a {noun}")
        if not isinstance(alias, str) or not PYTHON_IDENTIFIER.match(alias):
            problems.add(f"python.{key}.{name}", f"{_show(alias)} is not a Python identifier")
    return table


def _load_python(raw, name, kind, params, methods, problems) -> Python:
    default_class = "".join(part.capitalize() for part in (name or "x").split("_"))
    default_class += "ResourceAdaptor" if kind == "adaptor" else "MemoryResource"
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        problems.add("python", "must be a table")
        raw = {}
    _check_fields(raw, PYTHON_FIELDS, "python.", problems)
    class_name = raw.get("class", default_class)
    if not isinstance(class_name, str) or not PYTHON_IDENTIFIER.match(class_name):
        problems.add("python.class", f"{_show(class_name)} is not a Python class name")
    param_names = {p.name for p in params}
    names = _python_names(raw, "names", param_names, "parameter", problems)
    aliases = _python_names(raw, "aliases", {m.name for m in methods}, "method", problems)
    hidden = raw.get("hidden", [])
    if not isinstance(hidden, list):
        problems.add("python.hidden", "must be a list of parameter names")
        hidden = []
    for h in hidden:
        param = next((p for p in params if p.name == h), None)
        if param is None:
            problems.add("python.hidden", f"{_show(h)} is not a parameter")
        elif param.default is None:
            problems.add("python.hidden", f'"{h}" has no default to pass in its place')
    extends = raw.get("extends")
    if extends is not None and (not isinstance(extends, str) or not PYTHON_IDENTIFIER.match(extends)):
        problems.add("python.extends", f"{_show(extends)} is not a Python class name")
    replaced = raw.get("replaced", [])
    method_names = {m.name for m in methods}
    if not isinstance(replaced, list) or not all(isinstance(m, str) for m in replaced):
        problems.add("python.replaced", "must be a list of method names")
        replaced = []
    for m in replaced:
        if m not in method_names:
            problems.add("python.replaced", f"{_show(m)} is not a method")
        if extends is None:
            problems.add("python.replaced", f'"{m}" is replaced by nothing: name the class that defines it in `extends`')
    return Python(class_name=class_name, names=names, aliases=aliases, hidden=hidden, extends=extends,
                  replaced=replaced)


def _with_method_sets(data, spec_dir, problems):
    """The resource's [[methods]] followed by those of each file its
    method_sets names (spec/method_sets/<set>.toml: [[methods]] tables only),
    so resources over one kind of object list the methods they share once."""
    methods = data.get("methods", [])
    sets = data.get("method_sets", [])
    if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets) or len(set(sets)) != len(sets):
        problems.add("method_sets", f"{_show(sets)} must be a list of distinct method set names")
        return methods
    if not isinstance(methods, list):
        return methods
    methods = list(methods)
    for name in sets:
        path = spec_dir / "method_sets" / f"{name}.toml"
        try:
            with path.open("rb") as f:
                shared = tomllib.load(f)
        except OSError as e:
            problems.add("method_sets", f'"{name}": {path.name} cannot be read ({e.strerror})')
            continue
        except tomllib.TOMLDecodeError as e:
            problems.add("method_sets", f'"{name}": {e}')
            continue
        if set(shared) != {"methods"} or not isinstance(shared["methods"], list):
            problems.add("method_sets", f'"{name}": a method set holds [[methods]] tables and nothing else')
            continue
        methods.extend(shared["methods"])
    return methods


def _load_resource(path, data, known_resources, source):
    problems = _Problems(source)
    _check_fields(data, TOP_FIELDS, "", problems)
    name = _identifier(_require(data, "name", str, "", problems), "name", problems)
    if name and name != path.stem:
        problems.add("name", f'"{name}" must match the file name "{path.stem}"')
    kind = _require(data, "kind", str, "", problems)
    if kind is not None and kind not in KINDS:
        problems.add("kind", f'unknown kind "{kind}" (known: {", ".join(KINDS)})')
    doc = _require(data, "doc", str, "", problems) or ""
    thread_safe = _require(data, "thread_safe", bool, "", problems)
    raw_backends = _require(data, "backends", list, "", problems)
    backends = raw_backends or []
    for b in backends:
        if b not in BACKENDS:
            problems.add("backends", f'unknown backend {_show(b)} (known: {", ".join(BACKENDS)})')
    if len(set(map(_show, backends))) != len(backends):
        problems.add("backends", "names repeat")
    if raw_backends == []:
        problems.add("backends", "a resource must exist in at least one backend")
    equality = data.get("equality", "identity")
    if equality not in EQUALITY_RULES:
        problems.add("equality", f'unknown rule {_show(equality)} (known: {", ".join(EQUALITY_RULES)})')
    max_alignment = data.get("max_alignment", 256)
    alignment_from_upstream = max_alignment == "upstream"
    if max_alignment in ("any", "upstream"):
        max_alignment = None
    elif not _is_int(max_alignment) or max_alignment < 256 or max_alignment & (max_alignment - 1):
        problems.add("max_alignment",
                     f'{_show(max_alignment)} must be "any", "upstream" or a power of two of at least 256')
    state = data.get("state", True)
    if not isinstance(state, bool):
        problems.add("state", f"must be true or false, not {_show(state)}")
    hooks = data.get("hooks", [])
    if not isinstance(hooks, list) or any(h not in HOOKS for h in hooks) or len(set(map(_show, hooks))) != len(hooks):
        problems.add("hooks", f'{_show(hooks)} must list each of {", ".join(map(_show, HOOKS))} at most once')
        hooks = []

    params = _load_params(data.get("params"), name or "x", "params", problems)
    for callback in [p for p in params if p.type.is_callback]:
        # Each binding passes its own there: what stands for its function.
        arg = next((p for p in params if p.name == f"{callback.name}_arg"), None)
        if arg is None or arg.type is not TYPES["pointer"] or arg.default is None:
            problems.add("params", f'callback "{callback.name}" needs a pointer parameter "{callback.name}_arg" '
                         "with a default, passed to every call")
    checks = _load_checks(data.get("checks"), params, problems)
    methods = _load_methods(_with_method_sets(data, path.parent, problems), name or "x", problems, params)
    conformance = _load_conformance(data.get("conformance"), params, problems, known_resources)
    python = _load_python(data.get("python"), name, kind, params, methods, problems)

    properties = _require(data, "properties", (list, str), "", problems)
    if isinstance(properties, str) and properties not in ("upstream", "dynamic"):
        problems.add("properties", f'"{properties}" must be "upstream", "dynamic" or a list of flags')
    if isinstance(properties, list):
        for flag in properties:
            if not isinstance(flag, str) or flag not in PROPERTY_FLAGS:
                problems.add("properties", f'unknown property {_show(flag)} (known: {", ".join(PROPERTY_FLAGS)})')

    has_upstream = any(p.name == "upstream" and p.is_upstream for p in params)
    if kind in ("suballocator", "adaptor") and not has_upstream:
        problems.add("params", f'a {kind} needs a resource_ref parameter named "upstream"')
    if kind == "leaf" and has_upstream:
        problems.add("params", 'a leaf has no "upstream"; make it a suballocator or adaptor')
    if properties == "upstream" and not has_upstream:
        problems.add("properties", '"upstream" needs a resource_ref parameter named "upstream"')
    if alignment_from_upstream and not has_upstream:
        problems.add("max_alignment", '"upstream" needs a resource_ref parameter named "upstream"')
    if equality == "upstream" and not has_upstream:
        problems.add("equality", '"upstream" needs a resource_ref parameter named "upstream"')
    if state is False:
        if params:
            problems.add("state", "a resource with parameters keeps them in its state: state must be true")
        if equality in ("impl", "upstream"):
            problems.add("state", f'equality "{equality}" compares state: state must be true')
        if methods:
            problems.add("state", "methods read the resource's state: state must be true")
        if hooks:
            problems.add("state", "hooks set up the resource's state: state must be true")
    for p in params:
        if p.default is None and p.name not in conformance.args and not p.is_upstream:
            problems.add(f"conformance.args.{p.name}",
                         "missing: the conformance battery needs a value for a parameter without a default")
    if kind in ("suballocator", "adaptor") and not (conformance.upstreams_host or conformance.upstreams_gpu):
        problems.add("conformance.upstreams", f"a {kind} needs at least one upstream to be tested over")

    if problems.lines:
        return None, problems.lines
    return Resource(name=name, kind=kind, doc=doc.strip(), properties=properties,
                    thread_safe=thread_safe, backends=backends, equality=equality,
                    max_alignment=max_alignment, state=state, hooks=hooks, params=params, checks=checks,
                    methods=methods, conformance=conformance, source=source,
                    alignment_from_upstream=alignment_from_upstream, python=python), []


def _plain_value(value, type_name, where, problems):
    """A TOML value as a plain value of a spec type, or None (reported)."""
    ok = {"size_t": _is_int(value) and 0 <= value <= LARGEST_SIZE,
          "int": _is_int(value) and INT_RANGE[0] <= value <= INT_RANGE[1],
          "double": (_is_int(value) or isinstance(value, float)) and math.isfinite(value),
          "bool": isinstance(value, bool), "string": isinstance(value, str)}[type_name]
    if not ok:
        shown = {"size_t": f"an integer in [0, {LARGEST_SIZE}]", "int": "an integer in C's int range",
                 "double": "a finite number", "bool": "true or false", "string": "a string"}[type_name]
        problems.add(where, f"{_show(value)} must be {shown} (a {type_name})")
        return None
    return float(value) if type_name == "double" else value


def _size(value, where, problems, positive=True):
    if not _is_int(value) or value < (1 if positive else 0) or value > LARGEST_SIZE:
        problems.add(where, f"{_show(value)} must be an integer in [{1 if positive else 0}, {LARGEST_SIZE}]")
        return None
    return value


def _reading(key, value, resource, upstream, where, problems):
    """equals.<key>: a getter of the resource, or upstream.<getter> of EXPECT_UPSTREAM."""
    on_upstream = key.startswith("upstream.")
    owner = upstream if on_upstream else resource
    name = key.removeprefix("upstream.")
    if on_upstream and resource.upstream is None:
        problems.add(where, f'"{key}": the resource has no upstream')
        return None
    if owner is None:
        problems.add(where, f'"{key}": spec/{EXPECT_UPSTREAM}.toml, the expectations\' upstream, is missing')
        return None
    getters = {m.name: m for m in owner.getters if m.returns.name in COMPARABLE}
    method = getters.get(name)
    if method is None:
        problems.add(where, f'"{name}" is no getter of {owner.name} with a comparable result '
                            f"(known: {', '.join(getters) or 'none'})")
        return None
    plain = _plain_value(value, method.returns.name, where, problems)
    if plain is None:
        return None
    return Reading(owner=owner, method=method, value=literal(method.returns.name, plain), on_upstream=on_upstream,
                   raw=value)


class _Blocks:
    """The blocks an expectation's steps have made so far: numbered from 0
    as allocate steps succeed; `live` maps those not freed to their bytes."""
    def __init__(self):
        self.made = 0
        self.live = {}


def _call_args(method, given, where, problems):
    """A call step's `with`: a plain value for each parameter of the method,
    in the method's order (a table of parameter = value, or the value alone
    for a method of one parameter)."""
    if not isinstance(given, dict) and len(method.params) == 1:
        given = {method.params[0].name: given}
    if not isinstance(given, dict):
        problems.add(where, "must be a table of parameter = value, e.g. { limit = 4096 }")
        return []
    names = [q.name for q in method.params]
    for key in given:
        if key not in names:
            problems.add(f"{where}.{key}", f"is no parameter of {method.name} (its parameters: {', '.join(names) or 'none'})")
    args = []
    for q in method.params:
        if q.name not in given:
            problems.add(where, f"{method.name} needs {q.name}")
            continue
        plain = _plain_value(given[q.name], q.type.name, f"{where}.{q.name}", problems)
        if plain is not None:
            if q.type.numeric and not q.passes(plain):
                problems.add(f"{where}.{q.name}", f"{_show(given[q.name])} breaks a constraint of the parameter")
            args.append(literal(q.type.name, plain))
    return args


def _load_step(item, resource, upstream, where, blocks, problems):
    """One step; an allocate or deallocate step updates `blocks`."""
    if not isinstance(item, dict):
        problems.add(where.rstrip("."), f"must be an inline table like {{ allocate = 1000 }}, not {_toml_type_of(item)}")
        return None
    kinds = [k for k in item if k in STEP_KINDS]
    if len(kinds) != 1:
        problems.add(where.rstrip("."), f"{_show(item)} must have exactly one of {', '.join(STEP_KINDS)}")
        return None
    kind = kinds[0]
    _check_fields(item, STEP_FIELDS[kind] | {kind}, where, problems)
    value = item[kind]
    if kind == "allocate":
        size = _size(value, f"{where}allocate", problems)
        step = Step(kind, bytes=size or 0)
        fails = item.get("fails")
        if fails is not None:
            step.fails = STATUSES.get(fails) if isinstance(fails, str) else None
            if step.fails is None:
                problems.add(f"{where}fails", f"unknown failure {_show(fails)} (known: {', '.join(STATUSES)})")
        aligned = item.get("aligned_to")
        if aligned is not None:
            if fails is not None:
                problems.add(f"{where}aligned_to", "a failed allocation has no address")
            elif not _is_int(aligned) or aligned < 1 or aligned & (aligned - 1) or aligned > LARGEST_SIZE:
                problems.add(f"{where}aligned_to", f"{_show(aligned)} must be a power of two")
            else:
                step.aligned_to = aligned
        if fails is None and size is not None:
            step.block = blocks.made
            blocks.made += 1
            blocks.live[step.block] = size
        return step
    if kind == "deallocate":
        if not _is_int(value) or value not in blocks.live:
            problems.add(f"{where}deallocate", f"{_show(value)} is no live block (live: "
                                               f"{', '.join(map(str, blocks.live)) or 'none'}; blocks are numbered "
                                               "from 0 as allocate steps succeed)")
            return None
        return Step(kind, block=value, bytes=blocks.live.pop(value))
    if kind == "call":
        methods = {m.name: m for m in resource.methods
                   if all(q.type.name in EXPECT_ARG_TYPES for q in m.params)}
        if not isinstance(value, str) or value not in methods:
            problems.add(f"{where}call", f"{_show(value)} is no method of {resource.name} with plain parameters "
                                         f"(known: {', '.join(methods) or 'none'})")
            return None
        return Step(kind, method=methods[value],
                    args=_call_args(methods[value], item.get("with", {}), f"{where}with", problems))
    if not isinstance(value, dict) or not value:
        problems.add(f"{where}equals", "must be a table of getter = value, e.g. { bytes_current = 1024 }")
        return None
    readings = [_reading(k, v, resource, upstream, f"{where}equals.{k}", problems) for k, v in value.items()]
    return Step(kind, readings=[r for r in readings if r is not None])


def _load_expectations(raw, resource, upstream, problems):
    """[[expect]]: behavioural tests the generator writes in every language."""
    expectations, seen = [], set()
    if raw is not None and not resource.binding_testable:
        problems.add("expect", "the resource cannot be made from plain values in every language "
                               "(a parameter without a default has no sample): write tests/resources/"
                               f"{resource.name}.c instead")
        return expectations
    params = {p.name: p for p in resource.params}
    for where, item in _tables(raw, "expect", problems):
        _check_fields(item, EXPECT_FIELDS, where, problems)
        name = _identifier(_require(item, "name", str, where, problems), f"{where}name", problems)
        if name in seen:
            problems.add(f"{where}name", f'"{name}" repeats')
        seen.add(name)
        doc = _require(item, "doc", str, where, problems) or ""
        args = item.get("args", {})
        if not isinstance(args, dict):
            problems.add(f"{where}args", "must be a table of parameter = value")
            args = {}
        given = {}
        for key, value in args.items():
            p = params.get(key)
            if p is None or p.is_upstream:
                problems.add(f"{where}args.{key}", "is not a parameter an expectation can give "
                                                   f"(known: {', '.join(n for n, q in params.items() if not q.is_upstream)})")
            elif p.type.name not in EXPECT_ARG_TYPES or p.name in resource.python.hidden:
                problems.add(f"{where}args.{key}", f"a {p.type.name} parameter cannot be given in every language "
                                                   f"(plain types: {', '.join(EXPECT_ARG_TYPES)})")
            else:
                plain = _plain_value(value, p.type.name, f"{where}args.{key}", problems)
                if plain is not None:
                    if p.type.numeric and not p.passes(plain):
                        problems.add(f"{where}args.{key}", f"{_show(value)} breaks a constraint of the parameter")
                    given[p.name] = literal(p.type.name, plain)
        values = [(p, given[p.name]) if p.name in given else (p, resource.sample_literal(p))
                  for p in resource.params if p.name in given or (not p.is_upstream and p.default is None)]
        raw_steps = _require(item, "steps", list, where, problems) or []
        if not raw_steps and "steps" in item:
            problems.add(f"{where}steps", "is empty")
        blocks, steps = _Blocks(), []
        for j, raw_step in enumerate(raw_steps):
            step = _load_step(raw_step, resource, upstream, f"{where}steps[{j}].", blocks, problems)
            if step is not None:
                steps.append(step)
        checking = ("equals", "fails", "aligned_to")
        if raw_steps and not any(isinstance(st, dict) and any(k in st for k in checking) for st in raw_steps):
            problems.add(f"{where}steps", "checks nothing: add an equals step, a fails or an aligned_to")
        if name:
            expectations.append(Expectation(name=name, doc=doc.strip(), values=values, steps=steps,
                                            live=list(blocks.live.items())))
    return expectations


def load_specs(spec_dir: Path, display_root: Path | None = None) -> list[Resource]:
    """All resources of spec_dir, sorted by name, or SpecError with every problem."""
    spec_dir = Path(spec_dir)
    shown = (lambda path: str(path.relative_to(display_root))) if display_root else str
    paths = sorted(spec_dir.glob("*.toml"))
    problems, parsed = [], []
    for path in paths:
        source = shown(path)
        try:
            with path.open("rb") as f:
                parsed.append((path, tomllib.load(f), source))
        except tomllib.TOMLDecodeError as e:
            problems.append(f"{source}: {e}")
        except UnicodeDecodeError as e:
            problems.append(f"{source}: not UTF-8 text ({e.reason} at byte {e.start})")
        except OSError as e:
            problems.append(f"{source}: cannot be read ({e.strerror})")
    if not paths:
        problems.append(f"{shown(spec_dir)}: no *.toml spec files")
    known = {p.stem for p, _, _ in parsed}
    resources, raw_expectations = [], []
    for path, data, source in parsed:
        resource, lines = _load_resource(path, data, known, source)
        problems.extend(lines)
        if resource:
            resources.append(resource)
            raw_expectations.append((resource, data.get("expect")))
    by_name = {r.name: r for r in resources}
    for resource, raw in raw_expectations:
        found = _Problems(resource.source)
        resource.expectations = _load_expectations(raw, resource, by_name.get(EXPECT_UPSTREAM), found)
        problems.extend(found.lines)
    for r in resources:
        for u in r.conformance.upstreams_host + r.conformance.upstreams_gpu:
            upstream = by_name.get(u)
            if upstream and (upstream.upstream or any(p.default is None for p in upstream.params)):
                problems.append(f"{r.source}: conformance.upstreams: \"{u}\" cannot be made with defaults "
                                "alone, so it cannot serve as a test upstream")
        for u in r.conformance.upstreams_host:
            if u in by_name and not by_name[u].host:
                problems.append(f"{r.source}: conformance.upstreams.host: \"{u}\" does not exist in the host backend")
    if problems:
        raise SpecError(problems)
    _qualify_shared_enum_values(resources)
    return resources


def _qualify_shared_enum_values(resources: list[Resource]) -> None:
    """Gives the enums whose value names recur across resources a prefix
    for their Java and C# constants (model.Param.value_prefix)."""
    enums = [p for r in resources for p in r.enums]
    seen: dict[str, int] = {}
    for p in enums:
        for value in set(p.values):
            seen[value] = seen.get(value, 0) + 1
    for p in enums:
        if any(seen[value] > 1 for value in p.values):
            p.value_prefix = f"{p.resource}_"
