# SPDX-License-Identifier: Apache-2.0
"""What a spec means: parameter types, named defaults, and the resource model
the templates render. The loader (spec.py) builds these from TOML after
validating it; the templates read them and never the raw TOML."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

KINDS = ("leaf", "suballocator", "adaptor")
BACKENDS = ("cuda", "host")
EQUALITY_RULES = ("identity", "type", "impl", "upstream")
PROPERTY_FLAGS = {
    "device_accessible": "CMR_PROPERTY_DEVICE_ACCESSIBLE",
    "host_accessible": "CMR_PROPERTY_HOST_ACCESSIBLE",
}
CONFORMANCE_CASES = (
    "zero_size", "random_sizes", "alignments", "equality", "properties",
    "out_of_memory", "sync_pair", "streams", "threads", "free_on_other_thread",
    "destroyed_handle",
)
# What a resource may say it refuses on free, for the bad-input matrix: a
# pointer it never handed out (CMR_ERROR_UNKNOWN_POINTER) and a size other
# than the one allocated (CMR_ERROR_INVALID_ARGUMENT, the block kept). Only a
# resource that records its blocks can know either.
REJECTS = ("unknown_pointer", "wrong_size")


def c_string(text: str) -> str:
    """text escaped for the inside of a C string literal."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


# ---- one table of parameter types and every language's forms of them ----------
#
# Each form is a format string; the fields it may use are those of
# Param.form_fields: {v} the value (an expression of the language), {label}
# its name in messages, {enum} the enum type's name (Pascal case), {ENUM} the
# Python table of an enum's constants, {c_type} the C type, and the default as
# each language writes it ({Bool}, {bool}, {json}, {number}, {raw}, {Pascal},
# {UPPER}, {py_flags}, {go_flags}, {java_flags}, {cs_flags}). An empty form
# is "not used for this type". Templates print these through the Param and
# Method views (p.py, p.go, p.java, p.cs) and never test a type's name.


@dataclass(frozen=True)
class PythonForms:
    type: str = "object"        # a value's annotation (a result, a method's argument)
    accepts: str = ""           # what a parameter takes, where more than `type`
    convert: str = "{v}"        # the checked native value of the Python value {v}
    convert_defaulted: str = "" # the same for a parameter with a default (else convert)
    default: str = "None"       # a left-out parameter's value in the signature
    native_default: str = "None"  # what capi takes for the default (a hidden parameter)
    nullable: bool = True       # a parameter with a default also takes None
    sample: str = ""            # a value the generated tests pass (host_mr is their upstream)


@dataclass(frozen=True)
class GoForms:
    type: str = ""              # the Go type of a value
    native: str = "{v}"         # what capi takes for the Go value {v}
    default: str = ""           # an option's starting value (an optional one's is nil)
    out: str = ""               # the variable capi writes a result into (else type)
    from_out: str = "{v}"       # the Go result from that variable
    zero: str = "0"             # the result returned beside an error
    check: str = ""             # a function that checks a Go value before the call
    resolve: str = ""           # a function turning an optional's option into capi's value
    callback_field: str = ""    # a callback: its field of capi.Callbacks, and
    callback_wrap: str = ""     # the function stored there, calling the Go function {v}
    sample: str = ""            # a value the generated tests pass (upstream is theirs)


@dataclass(frozen=True)
class JavaForms:
    type: str = ""              # the Java type of a value
    boxed: str = ""             # an optional parameter's type where null asks its default
    given: str = "{v}"          # what a constructor hands create() for the Java value {v}
    given_boxed: str = ""       # the same for a boxed optional value (else given)
    native: str = "{v}"         # what the native call takes for the value create() got
    default: str = ""           # what a constructor passes for a parameter left out
    returns: str = ""           # the CMR_JAVA_RETURNS_* macro of a result (java/swig/cmr_java.swg)
    needs_import: str = ""      # a java.util class the generated file imports for it
    equals_tail: str = ""       # what assertEquals(what, expected, actual...) adds for a result of this type
    sample: str = ""            # a value the generated tests pass (upstream is theirs)


@dataclass(frozen=True)
class CSharpForms:
    type: str = ""              # the C# type of a value
    native: str = "{v}"         # what the native module takes for the C# value {v}
    default: str = ""           # a parameter's default in a signature (an optional one's is null)
    native_default: str = "null"  # what C# passes for a hidden parameter
    out: str = ""               # the variable a result is written into (else type)
    from_out: str = "{v}"       # the C# result from that variable
    sample: str = ""            # a value the generated tests pass (upstream is theirs)


@dataclass(frozen=True)
class SwigForms:
    """How a language's SWIG interface passes a callback of this type: the
    per-type trampoline its support file defines once (python/swig/cmr_python.swg,
    java/swig/callbacks.swg, go/swig/callbacks.swg), and the C type of what
    stands for the language's function as the trampoline's argument."""
    trampoline: str
    holder: str


@dataclass(frozen=True)
class CType:
    """A spec parameter type: how C spells, prints and checks it, and its
    form in every language the generator writes."""
    name: str
    c: str
    printf: str | None          # format of a value in a message, None if not printable
    constraints: frozenset      # constraint fields allowed on a parameter of this type
    # A parameter of this type with a default takes an optional value in C:
    # the struct's name and its macro (core.h: CMR_SIZE(v), CMR_SIZE_DEFAULT).
    optional: str | None = None
    optional_macro: str | None = None
    null_status: str | None = None  # status when a nonzero pointer-like value is NULL
    returnable: bool = True
    stack_kind: str = "CMR_STACK_UNWRITABLE"  # how a stack expression writes it (stack_table.h)
    stack_member: str = "function"            # its member of cmr_stack_value
    cast_from_stack: bool = False             # the stack value needs a cast to the C type
    c_check: str = ""           # a wrapper check beyond the constraints: "range" (enum), "flags"
    numeric: bool = False       # its bad values are numbers (constraints); tests may pass samples
    scalar: bool = False        # a result the battery can read back and compare (a number, a bool)
    is_callback: bool = False   # a function the resource calls, with a pointer argument of its own
    c_equal: str = "{v} == {expected}"  # a C condition: the result {v} is the value {expected}
    cpp_result: str = ""        # the C++ layer's result type, when it is not the C type
    py: PythonForms = PythonForms()
    go: GoForms = GoForms()
    java: JavaForms = JavaForms()
    cs: CSharpForms = CSharpForms()
    swig: dict = field(default_factory=dict)  # language -> SwigForms (callbacks)

    @property
    def cs_optional(self) -> str:
        """The C# struct of its optional C struct (cmr_optional_size: OptionalSize)."""
        return "".join(word.capitalize() for word in self.optional.removeprefix("cmr_").split("_"))

    @property
    def test_printf(self) -> str | None:
        """The format of a value in a generated test's message: the tests see
        only the public API, so a string is shown whole (printf_arg's
        CMR_QUOTE is the runtime's)."""
        return "%s" if self.name == "string" else self.printf

    def printf_arg(self, expr: str) -> str:
        """The argument(s) of a value in a message. A string shows at most
        CMR_QUOTE_MAX characters (errors.h), so a long one never crowds the
        reason out of the message."""
        if self.printf == "%p":
            return f"(void *){expr}"
        return f"CMR_QUOTE({expr})" if self.name == "string" else expr


def _callback_swig(kind: str) -> dict:
    """The trampolines of a callback type, one per language with a C shim."""
    return {"python": SwigForms(f"cmr_py_{kind}_trampoline", "PyObject *"),
            "java": SwigForms(f"cmr_java_{kind}_trampoline", "cmr_java_callback *"),
            "go": SwigForms(f"cmr_go_{kind}_trampoline", "void *")}


def _callback_type(kind: str, py_type: str, py_sample: str, go: GoForms, java_sample: str,
                   cs_sample: str) -> CType:
    """A callback parameter type, `cmr_<kind>_callback`: its Python check and
    its Java and C# types and native forms follow from its kind
    (`_args.<kind>_callback`, `<Kind>Callback`); its Python type, Go forms and
    the samples the tests pass are its own."""
    java_type = f"{kind.capitalize()}Callback"
    return CType(f"{kind}_callback", f"cmr_{kind}_callback", None, frozenset(),
                 null_status="CMR_ERROR_NULL_POINTER", returnable=False, is_callback=True,
                 py=PythonForms(py_type, "", f'_args.{kind}_callback({{v}}, "{{v}}")', sample=py_sample),
                 go=go,
                 java=JavaForms(java_type, native="{v}Native.address()", sample=java_sample),
                 cs=CSharpForms(java_type, native="{v}Native.Pointer", sample=cs_sample),
                 swig=_callback_swig(kind))


TYPES = {
    t.name: t for t in (
        CType("size_t", "size_t", "%zu", frozenset({"multiple_of", "power_of_two", "min", "max", "nonzero"}),
              optional="cmr_optional_size", optional_macro="CMR_SIZE",
              stack_kind="CMR_STACK_SIZE", stack_member="size", numeric=True, scalar=True,
              py=PythonForms("int", "int | str", '_args.size({v}, "{v}")', '_args.optional_size({v}, "{v}")',
                             default="{number}"),
              go=GoForms("uint64"),
              java=JavaForms("long", "Long", 'Arguments.size("{v}", {v})', 'Arguments.optionalSize("{v}", {v})',
                             returns="LONG"),
              cs=CSharpForms("ulong")),
        CType("int", "int", "%d", frozenset({"min", "max", "nonzero"}),
              optional="cmr_optional_int", optional_macro="CMR_INT",
              stack_kind="CMR_STACK_INT", stack_member="integer", numeric=True, scalar=True,
              py=PythonForms("int", "", '_args.integer({v}, "{v}")', '_args.optional_integer({v}, "{v}")',
                             default="{number}"),
              go=GoForms("int", out="int32", from_out="int({v})", resolve="optionalInt"),
              java=JavaForms("int", "Integer", returns="INT"),
              cs=CSharpForms("int")),
        CType("bool", "bool", "%d", frozenset(), stack_kind="CMR_STACK_BOOL", stack_member="boolean", scalar=True,
              py=PythonForms("bool", "", '_args.boolean({v}, "{v}")', default="{Bool}", native_default="{Bool}",
                             nullable=False),
              go=GoForms("bool", default="{bool}", zero="false"),
              java=JavaForms("boolean", default="{bool}", returns="BOOLEAN"),
              cs=CSharpForms("bool", default="{bool}", native_default="{bool}")),
        CType("double", "double", "%g", frozenset({"min", "max"}), stack_kind="CMR_STACK_DOUBLE",
              stack_member="real", numeric=True, scalar=True,
              py=PythonForms("float", "", '_args.real({v}, "{v}")', default="{number}"),
              go=GoForms("float64", default="{raw}"),
              java=JavaForms("double", default="{raw}", returns="DOUBLE", equals_tail=", 0.0"),
              cs=CSharpForms("double", default="{raw}")),
        CType("pointer", "void *", "%p", frozenset({"nonzero"}), null_status="CMR_ERROR_NULL_POINTER",
              stack_member="pointer",
              py=PythonForms("int", "", '_args.address(0 if {v} is None else {v}, "{v}")', native_default="0"),
              go=GoForms("uintptr", default="0"),
              java=JavaForms("long", default="0L", returns="LONG"),
              cs=CSharpForms("IntPtr", default="default(IntPtr)", native_default="IntPtr.Zero")),
        CType("string", "const char *", "%.*s%s", frozenset({"nonzero"}), null_status="CMR_ERROR_NULL_POINTER",
              cpp_result="std::string", stack_kind="CMR_STACK_STRING", stack_member="string", c_equal="strcmp({v}, {expected}) == 0",
              py=PythonForms("str", "", '_args.string({v}, "{v}")', '_args.string({json} if {v} is None else {v}, "{v}")',
                             native_default="{json}"),
              go=GoForms("string", default="{json}", zero='""', check="checkText"),
              java=JavaForms("String", default="{json}", returns="STRING"),
              cs=CSharpForms("string", default="{json}", native_default="{json}")),
        CType("properties", "unsigned", "%#x", frozenset(), stack_kind="CMR_STACK_PROPERTIES",
              stack_member="properties", c_check="flags",
              py=PythonForms("int", "", '_args.c_unsigned({v}, "{v}")',
                             '{py_flags} if {v} is None else _args.c_unsigned({v}, "{v}")', native_default="{py_flags}"),
              go=GoForms("Properties", native="uint({v})", default="{go_flags}"),
              java=JavaForms("Set<Property>", native='Arguments.properties("{v}", {v})', default="{java_flags}",
                             returns="INT", needs_import="EnumSet Set"),
              cs=CSharpForms("ResourceProperties", native="(uint){v}", default="{cs_flags}",
                             native_default="{cs_flags}", out="uint", from_out="(ResourceProperties){v}")),
        CType("resource_ref", "cmr_resource_ref", None, frozenset({"retain"}), returnable=False,
              stack_kind="CMR_STACK_RESOURCE", stack_member="ref",
              py=PythonForms("DeviceMemoryResource", "", '_args.ref({v}, "{v}")'),
              go=GoForms("Resource", native="{v}Ref"),
              java=JavaForms("MemoryResource", native='Arguments.ref("{v}", {v})'),
              cs=CSharpForms("MemoryResource", native="{v}Lease.Ref")),
        _callback_type("allocate", "Callable[[int, Any], int | None]", "lambda n, s: host_mr.allocate(n, s)",
                       GoForms("func(bytes uint64, stream Stream) uintptr", callback_field="Allocate",
                               callback_wrap="func(bytes uint64, stream uintptr) uintptr "
                                             "{ return {v}(bytes, Stream(stream)) }",
                               sample="func(bytes uint64, stream cmr.Stream) uintptr {\n"
                                      "\t\t\taddress, _ := upstream.AllocateOn(bytes, stream)\n"
                                      "\t\t\treturn address\n\t\t}"),
                       "(bytes, stream) -> upstream.allocate(bytes, stream)",
                       "(bytes, stream) => upstream.Allocate(bytes, stream)"),
        _callback_type("deallocate", "Callable[[int, int, Any], None]", "lambda p, n, s: host_mr.deallocate(p, n, s)",
                       GoForms("func(address uintptr, bytes uint64, stream Stream)", callback_field="Deallocate",
                               callback_wrap="func(address uintptr, bytes uint64, stream uintptr) "
                                             "{ {v}(address, bytes, Stream(stream)) }",
                               sample="func(address uintptr, bytes uint64, stream cmr.Stream) {\n"
                                      "\t\t\t_ = upstream.DeallocateOn(address, bytes, stream)\n\t\t}"),
                       "(ptr, bytes, stream) -> upstream.deallocate(ptr, bytes, stream)",
                       "(ptr, bytes, stream) => upstream.Deallocate(ptr, bytes, stream)"),
        _callback_type("failure", "Callable[[int], bool]", "lambda n: False",
                       GoForms("func(bytes uint64) bool", callback_field="Retry", callback_wrap="{v}",
                               sample="func(bytes uint64) bool { return false }"),
                       "bytes -> false", "bytes => false"),
        CType("enum", "", "%d", frozenset({"values"}), stack_kind="CMR_STACK_ENUM", stack_member="enumeration",
              cast_from_stack=True, c_check="range",
              py=PythonForms("str", "", '_args.enum({v}, "{v}", _{ENUM})', default='"{raw}"',
                             native_default='_{ENUM}["{raw}"]', nullable=False),
              go=GoForms("{enum}", native="capi.Enum_SS_{c_type}({v})", default="{enum}{Pascal}"),
              java=JavaForms("{enum}", native='Objects.requireNonNull({v}, "{v} is null")', default="{enum}.{SCOPED_UPPER}",
                             needs_import="Objects"),
              cs=CSharpForms("{enum}", default="{enum}.{ScopedPascal}")),
    )
}
# How each language writes a set of property flags (a properties default).
_FLAG_SETS = {
    "py_flags": (lambda f: f"capi.CMR_PROPERTY_{f.upper()}", " | ", "0", "{}"),
    "go_flags": (lambda f: _pascal(f), " | ", "0", "{}"),
    "java_flags": (lambda f: f"Property.{f.upper()}", ", ", "EnumSet.noneOf(Property.class)", "EnumSet.of({})"),
    "cs_flags": (lambda f: f"ResourceProperties.{_pascal(f)}", " | ", "ResourceProperties.None", "{}"),
}


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _fill(text: str, fields: dict, value: str = "") -> str:
    """A form with its {field}s filled in ({v} and {label}: value); other
    braces (a Go function body) are the language's own."""
    def field_value(match):
        name = match.group(1)
        if name in ("v", "label"):
            return value
        return fields[name]
    return re.sub(r"\{(\w+)\}", field_value, text)


# The prefix of each language's names in its SWIG interface (Resource.shim).
SHIM_PREFIXES = {"python": "py", "java": "java", "go": "go"}
# What a pointer parameter may point to (spec field `pointee`), with the
# header that declares it; every binding passes it as it passes any pointer.
POINTEES = {"FILE": "<stdio.h>"}
# Callback types are never NULL: a resource cannot call a missing function.
ALWAYS_NONZERO = {"allocate_callback", "deallocate_callback", "failure_callback"}


@dataclass(frozen=True)
class NamedDefault:
    """A default computed at creation time rather than written as a literal."""
    types: tuple
    doc: str
    expr: str | None = None     # a C expression, or
    call: str | None = None     # a runtime function cmr_status f(T *out)


NAMED_DEFAULTS = {
    "half_of_free_device_memory": NamedDefault(
        ("size_t",), "half of the current device's free memory, rounded down to 256 bytes",
        call="cmr_default_half_of_free_device_memory"),
    "unlimited": NamedDefault(("size_t",), "no limit (SIZE_MAX)", expr="SIZE_MAX"),
    "keep_everything": NamedDefault(("size_t",), "keep everything (SIZE_MAX)", expr="SIZE_MAX"),
}


@dataclass(frozen=True)
class BadValue:
    """An argument the wrapper must refuse: a label for the case name, its C
    expression and the status the wrapper returns."""
    label: str
    c: str
    status: str


# Values the battery passes for a parameter that is not the one under test:
# each passes every check a spec can put on its type.
_VALID_C = {
    "bool": "false", "double": "1.0", "pointer": "(void *)cmr_battery_marker", "string": '"bad_inputs"',
    "properties": "0u", "resource_ref": "subject", "allocate_callback": "cmr_battery_forward_allocate",
    "deallocate_callback": "cmr_battery_forward_deallocate", "failure_callback": "cmr_battery_never_retry",
}


NUMERIC_CONSTRAINTS = ("nonzero", "multiple_of", "power_of_two", "min", "max")
# The far end of each optional type: case label, value, C expression.
_EXTREMES = {"size_t": ("size_max", 2**64 - 1, "SIZE_MAX"), "int": ("int_min", -2**31, "INT32_MIN")}


def _violates(value, constraint, bound) -> bool:
    if constraint == "nonzero":
        return value == 0
    if constraint == "multiple_of":
        return value % bound != 0
    if constraint == "power_of_two":
        return value <= 0 or value & (value - 1) != 0
    if constraint == "min":
        return value < bound
    return value > bound  # max


def _number_c(kind: str, value) -> str:
    if kind == "size_t":
        return f"(size_t){value}u"
    return repr(float(value)) if kind == "double" else str(value)


@dataclass
class Param:
    name: str
    type: CType
    doc: str
    resource: str                     # owning resource name, for C names
    default: object = None            # literal (int/bool/str/list) or a NamedDefault
    default_text: str | None = None   # how docs show the default
    constraints: dict = field(default_factory=dict)
    values: list = field(default_factory=list)   # enum values
    retain: bool = False
    pointee: str | None = None        # pointer parameters: the type pointed to (POINTEES), else void
    # An enum whose value names another resource's enum also uses: its
    # values' Java and C# names carry this prefix (the resource's name), as
    # SWIG keeps C's enum constants in one scope and drops a second SERVE.
    value_prefix: str = ""
    # The word of its Go option (With<Word>), when not its name (render.go_options).
    go_option_word: str = ""

    # ---- the forms of the type table, filled in for this parameter ----

    @property
    def form_fields(self) -> dict:
        """The fields a form of the type table may use (see TYPES)."""
        d = self.default
        literal = d is not None and not isinstance(d, NamedDefault)
        word = d if isinstance(d, str) else ""
        fields = {
            "enum": _pascal(self.resource) + _pascal(self.name), "ENUM": f"{self.resource}_{self.name}".upper(),
            "c_type": self.c_type, "raw": str(d) if literal else "", "Bool": "True" if d else "False",
            "bool": "true" if d else "false", "json": json.dumps(d) if literal else "",
            "number": str(d) if literal and not isinstance(d, (str, list)) else "None",
            "Pascal": _pascal(word), "UPPER": word.upper(),
            # Java's and C#'s constant of the value (value_prefix).
            "SCOPED_UPPER": (self.value_prefix + word).upper(), "ScopedPascal": _pascal(self.value_prefix + word),
        }
        flags = d if isinstance(d, list) else []
        for key, (item, separator, empty, wrap) in _FLAG_SETS.items():
            fields[key] = wrap.format(separator.join(item(f) for f in flags)) if flags else empty
        return fields

    def _form(self, text: str, value: str = "") -> str:
        return _fill(text, self.form_fields, value)

    def form(self, language: str, name: str, value: str = "") -> str:
        """One form of the type table as it reads for this parameter (and
        `value`): p.form("go", "native", "o.size")."""
        return self._form(getattr(getattr(self.type, language), name), value)

    @property
    def py_accepts(self) -> str:
        """What the Python parameter takes, as an annotation."""
        forms = self.type.py
        text = self._form(forms.accepts or forms.type)
        return text + (" | None" if self.default is not None and forms.nullable else "")

    @property
    def py_shown(self) -> str:
        """What the Python parameter takes, as its docstring says it."""
        text = self._form(self.type.py.accepts or self.type.py.type)
        if "[" not in text:  # a union reads as words; a Callable's stays as written
            text = text.replace(" | ", " or ")
        return text + (", one of " + ", ".join(json.dumps(v) for v in self.values) if self.values else "")

    @property
    def py_default(self) -> str:
        """`=default` after the Python parameter, or nothing."""
        return "" if self.default is None else "=" + self._form(self.type.py.default)

    def py_convert(self, value: str) -> str:
        forms = self.type.py
        return self._form(forms.convert_defaulted if self.default is not None and forms.convert_defaulted
                          else forms.convert, value)

    @property
    def go_type(self) -> str:
        return self._form(self.type.go.type)

    @property
    def go_option_type(self) -> str:
        """An option's field: an optional value is a pointer, nil until given."""
        return ("*" if self.is_optional else "") + self.go_type

    @property
    def go_default(self) -> str:
        return "nil" if self.is_optional else self._form(self.type.go.default)

    @property
    def go_resolve(self) -> str:
        return self.type.go.resolve if self.is_optional else ""

    @property
    def java_type(self) -> str:
        return self._form(self.type.java.type)

    @property
    def java_boxed_type(self) -> str:
        return self._form(self.type.java.boxed) if self.is_optional else self.java_type

    def java_given(self, value: str, boxed: bool = False) -> str:
        forms = self.type.java
        return self._form(forms.given_boxed if boxed and self.is_optional and forms.given_boxed else forms.given,
                          value)

    def java_arg(self, value: str) -> str:
        """A method's argument: the Java value checked and made native."""
        return self.form("java", "native", self.java_given(value))

    @property
    def java_default(self) -> str:
        return "null" if self.is_optional else self._form(self.type.java.default)

    @property
    def cs_type(self) -> str:
        return self._form(self.type.cs.type) + ("?" if self.is_optional else "")

    @property
    def cs_default(self) -> str:
        """` = default` after the C# parameter, or nothing."""
        if self.default is None:
            return ""
        return " = " + ("null" if self.is_optional else self._form(self.type.cs.default))

    @property
    def is_callback(self) -> bool:
        return self.type.is_callback

    @property
    def is_enum(self) -> bool:
        return bool(self.values)

    @property
    def value_c_type(self) -> str:
        """The C type of the value, once an optional one is resolved."""
        if self.type.name == "enum":
            return f"cmr_{self.resource}_{self.name}"
        if self.pointee is not None:
            return f"{self.pointee} *"
        return self.type.c

    @property
    def c_type(self) -> str:
        """The C type the create function takes."""
        return self.type.optional if self.is_optional else self.value_c_type

    @staticmethod
    def _decl(c_type: str, name: str) -> str:
        return f"{c_type}{'' if c_type.endswith('*') else ' '}{name}"

    @property
    def c_decl(self) -> str:
        """The parameter as the public prototype declares it."""
        return self._decl(self.c_type, self.name)

    @property
    def impl_decl(self) -> str:
        """The parameter as the algorithm takes it: the resolved value."""
        return self._decl(self.value_c_type, self.name)

    @property
    def wrapper_decl(self) -> str:
        """The parameter as the wrapper's definition names it."""
        return self._decl(self.c_type, self.option_name)

    @property
    def option_name(self) -> str:
        """What the wrapper calls an optional parameter, whose resolved
        value takes the parameter's own name."""
        return f"{self.name}_option" if self.is_optional else self.name

    def given_c(self, value: str) -> str:
        """A C argument for this parameter with `value` given explicitly."""
        return f"{self.type.optional_macro}({value})" if self.is_optional else value

    @property
    def default_arg_c(self) -> str:
        """The C argument that asks for the default of an optional parameter."""
        return f"{self.type.optional_macro}_DEFAULT"

    def java_value(self, value: str) -> str:
        """An enum value's constant in the Java enum."""
        return (self.value_prefix + value).upper()

    def cs_value(self, value: str) -> str:
        """An enum value's constant in the C# enum."""
        return _pascal(self.value_prefix + value)

    def enum_constant(self, value: str) -> str:
        return f"CMR_{self.resource}_{self.name}_{value}".upper()

    @property
    def is_optional(self) -> bool:
        """Whether C passes an optional value (CMR_SIZE(v) or CMR_SIZE_DEFAULT)."""
        return self.default is not None and self.type.optional is not None

    @property
    def default_c(self) -> str | None:
        """The C value of a literal default (what C callers pass, and what
        the wrapper uses when an optional parameter is not set)."""
        d = self.default
        if d is None or isinstance(d, NamedDefault):
            return None
        if self.type.name == "enum":
            return self.enum_constant(d)
        if self.type.name == "properties":
            return " | ".join(PROPERTY_FLAGS[f] for f in d) if d else "0u"
        if self.type.name == "bool":
            return "true" if d else "false"
        if self.type.name == "pointer":
            return "NULL"
        if self.type.name == "size_t":
            return f"(size_t){d}u"
        return repr(d) if not isinstance(d, str) else f'"{c_string(d)}"'

    @property
    def default_call(self) -> str | None:
        """The runtime function that computes a named default, if any."""
        return self.default.call if isinstance(self.default, NamedDefault) else None

    @property
    def default_expr(self) -> str | None:
        """The C expression of a default that needs no call."""
        if isinstance(self.default, NamedDefault):
            return self.default.expr
        return self.default_c

    @property
    def expression_default(self) -> str | None:
        """How the default reads in a stack expression: a named default's
        name, or the literal as the parser reads it back."""
        d = self.default
        if d is None:
            return None
        if isinstance(d, NamedDefault):
            return next(name for name, named in NAMED_DEFAULTS.items() if named == d)
        kind = self.type.name
        if kind == "bool":
            return "true" if d else "false"
        if kind == "string":
            return '"' + d.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if kind == "properties":
            return "|".join(d) if d else "none"
        if kind == "pointer":
            return "null"
        return str(d)

    @property
    def expression_default_c(self) -> str | None:
        """expression_default as the inside of a C string literal."""
        text = self.expression_default
        return None if text is None else c_string(text)

    @property
    def is_upstream(self) -> bool:
        return self.type.name == "resource_ref"

    @property
    def numeric_constraints(self) -> dict:
        """The constraints the wrapper checks as numbers (a size_t min of 0 is not checked)."""
        return {k: v for k, v in self.constraints.items() if k in NUMERIC_CONSTRAINTS
                and v is not False and not (k == "min" and v == 0 and self.type.name == "size_t")}

    def _candidates(self, constraint, bound) -> list:
        """Values just outside one constraint, the closest first."""
        c = self.constraints
        step = c.get("multiple_of", 1)
        low = max(c.get("min", 1), step, 1)
        if constraint == "nonzero":
            return [0]
        if constraint == "multiple_of":
            return [low + 1, bound + 1]
        if constraint == "power_of_two":
            return [low * 3, 3, 0]
        if constraint == "min":
            return [bound - step, bound - 1] if self.type.name != "size_t" or bound > 0 else []
        return [bound + step, bound + 1]

    def _outside(self, constraint, bound) -> str | None:
        """A C value that fails `constraint` and, where one exists, no other."""
        candidates = [v for v in self._candidates(constraint, bound)
                      if v >= 0 or self.type.name != "size_t"]
        candidates = [v for v in candidates if _violates(v, constraint, bound)]
        others = {k: b for k, b in self.numeric_constraints.items() if k != constraint}
        alone = [v for v in candidates if not any(_violates(v, k, b) for k, b in others.items())]
        chosen = (alone or candidates or [None])[0]
        return None if chosen is None else _number_c(self.type.name, chosen)

    @property
    def bad_values(self) -> list:
        """Every argument the wrapper's checks of this parameter refuse."""
        kind = self.type.name
        if kind == "resource_ref":
            return [BadValue("zeroed_ref", "(cmr_resource_ref){0}", "CMR_ERROR_INVALID_REF"),
                    BadValue("destroyed_ref", "cmr_battery_destroyed_ref()", "CMR_ERROR_DESTROYED_HANDLE")]
        if self.type.null_status:
            nonzero = self.constraints.get("nonzero") or kind in ALWAYS_NONZERO
            return [BadValue("null", "NULL", self.type.null_status)] if nonzero else []
        if kind == "enum":
            return [BadValue("enum_below", f"({self.c_type})-1", "CMR_ERROR_INVALID_ARGUMENT"),
                    BadValue("enum_above", f"({self.c_type}){len(self.values)}", "CMR_ERROR_INVALID_ARGUMENT")]
        if kind == "properties":
            return [BadValue("unknown_bits", "0x4u", "CMR_ERROR_INVALID_ARGUMENT")]
        bad = []
        for constraint, bound in self.numeric_constraints.items():
            value = self._outside(constraint, bound)
            if value is not None:
                bad.append(BadValue(constraint, self.given_c(value), "CMR_ERROR_INVALID_ARGUMENT"))
        # The extreme that once meant "default" (SIZE_MAX, INT32_MIN) is an
        # explicit value like any other: refused where a constraint refuses it.
        extreme = _EXTREMES.get(self.type.name)
        if self.is_optional and extreme and any(_violates(extreme[1], k, b)
                                                for k, b in self.numeric_constraints.items()):
            bad.append(BadValue(extreme[0], self.given_c(extreme[2]), "CMR_ERROR_INVALID_ARGUMENT"))
        return bad

    def passes(self, value) -> bool:
        """Whether a number passes every numeric constraint of the parameter."""
        return not any(_violates(value, k, b) for k, b in self.numeric_constraints.items())

    @property
    def bad_numbers(self) -> list:
        """(label, number) for each constraint a plain number can break, the
        number failing that constraint alone where one does: what the binding
        tests pass to see the language's invalid-argument error."""
        out = []
        if self.type.name not in ("size_t", "int", "double"):
            return out
        for constraint, bound in self.numeric_constraints.items():
            value = self._outside(constraint, bound)
            if value is None:
                continue
            number = float(value) if self.type.name == "double" else int(re.sub(r"\D", "", value.replace("(size_t)", "")) or 0)
            if value.lstrip().startswith("-"):
                number = -abs(number)
            if abs(number) <= _LARGEST_SAMPLE:
                out.append((constraint, literal(self.type.name, number)))
        return out

    @property
    def valid_c(self) -> str:
        """A value for this parameter that passes its checks."""
        if self.type.name in _VALID_C:
            return _VALID_C[self.type.name]
        c = self.numeric_constraints
        for v in (4096, c.get("min", 0), c.get("max", 0), 1):
            if not any(_violates(v, k, b) for k, b in c.items()):
                return _number_c(self.type.name, v)
        return _number_c(self.type.name, c.get("min", 1))


# ---- what the generated binding tests pass: one table of value forms ---------------

# A conformance argument the binding tests can read as a plain number:
# 4096, (size_t)1 << 32, 1048576u.
_PLAIN_NUMBER = re.compile(r"^\s*(?:\(size_t\))?\s*(\d+)u?\s*(?:<<\s*(\d+))?\s*$")
_PLAIN_STRING = re.compile(r'^"([^"\\]*)"$')


@dataclass(frozen=True)
class Literal:
    """How each language writes a plain value of one spec type; `value` is
    the Python value (int, float, bool or str)."""
    python: str
    java: str
    go: str
    csharp: str
    c: str = ""


def literal(type_name: str, value) -> Literal:
    """A plain value of a spec type in every language the tests are generated for."""
    if type_name == "bool":
        return Literal("True" if value else "False", *(["true" if value else "false"] * 4))
    if type_name == "string":
        text = json.dumps(value)
        return Literal(text, text, text, text, f'"{c_string(value)}"')
    if type_name == "double":
        text = repr(float(value))
        return Literal(text, text, text, text, text)
    if type_name == "size_t":
        return Literal(str(value), f"{value}L", str(value), f"{value}UL", f"(size_t){value}u")
    return Literal(str(value), str(value), str(value), str(value), str(value))


# Java's long and C#'s ulong hold what the tests pass; a size past 2^63 - 1
# is no Java long, so such a bad value is left to the C battery.
_LARGEST_SAMPLE = 2**63 - 1


@dataclass
class Check:
    """A constraint over several parameters: a C expression and a message
    whose {name} fields are replaced by the parameters' values."""
    expr: str
    message: str
    printf_message: str = ""
    printf_args: list = field(default_factory=list)


@dataclass
class Method:
    name: str
    doc: str
    returns: CType | None
    params: list
    # The creation parameter it returns (spec: stored = "<param>"): the
    # wrapper keeps that value and defines the method; the algorithm does not.
    stored: Param | None = None
    # The field of the algorithm's struct it reads (spec: counter = "<field>",
    # an `_Atomic size_t`): the wrapper defines the method; the algorithm does not.
    counter: str | None = None
    # Whether it changes the resource though it takes nothing and returns a
    # value (spec: changes = true, e.g. a snapshot taken): not a getter.
    changes: bool = False
    # Whether what it returns is new and the caller's to release (spec:
    # hands_out = true, e.g. a file descriptor): not a getter, and the
    # generated tests do not call it on a resource made for something else.
    hands_out: bool = False

    @property
    def is_getter(self) -> bool:
        """Takes nothing, returns a value and changes nothing: C# makes it a property."""
        return self.returns is not None and not self.params and not self.changes and not self.hands_out

    # ---- its result in each language (the type table's result forms) ----

    @property
    def py_result(self) -> str:
        return "None" if self.returns is None else self.returns.py.type

    @property
    def java_result(self) -> str:
        return "void" if self.returns is None else self.returns.java.type

    @property
    def java_returns(self) -> str:
        return f"CMR_JAVA_RETURNS_{self.returns.java.returns}"

    @property
    def cs_result(self) -> str:
        return "void" if self.returns is None else self.returns.cs.type

    def out_type(self, language: str) -> str:
        """The variable a language's native call writes the result into."""
        forms = getattr(self.returns, language)
        return forms.out or forms.type

    def from_out(self, language: str, value: str) -> str:
        """The language's result from that variable."""
        return _fill(getattr(self.returns, language).from_out, {}, value)


# ---- behavioural expectations (spec: [[expect]]) -----------------------------------


@dataclass(frozen=True)
class ExpectedStatus:
    """A failure an expectation may expect of a step, as each language's
    generated test recognises it."""
    c: str          # the cmr_status
    python: str     # the exception cmr.mr raises
    go: str         # the cmr.Status errors.Is matches
    java: str       # the Throwable class thrown
    csharp: str     # the exception class thrown


STATUSES = {
    "out_of_memory": ExpectedStatus("CMR_ERROR_OUT_OF_MEMORY", "MemoryError", "cmr.ErrOutOfMemory",
                                    "CmrOutOfMemoryError", "CmrOutOfMemoryException"),
}
# The step kinds of an expectation, each a key of its inline table.
STEP_KINDS = ("allocate", "deallocate", "call", "equals")
# The types an `equals` check can compare (a getter's result): plain values
# every language's literal table writes.
COMPARABLE = ("size_t", "int", "bool", "double", "string")
# The resource an adaptor's or suballocator's expectations run over, and
# whose getters `upstream.<getter>` reads: it counts what reached it.
EXPECT_UPSTREAM = "statistics"


@dataclass
class Reading:
    """One getter read by an `equals` step: `owner` is the resource whose
    method it is (the subject, or EXPECT_UPSTREAM for upstream.<getter>)."""
    owner: object       # Resource
    method: Method
    value: Literal
    on_upstream: bool
    raw: object         # the spec's value, for messages

    @property
    def label(self) -> str:
        return ("upstream." if self.on_upstream else "") + self.method.name

    def c_matches(self, result: str) -> str:
        """A C condition: `result` is the expected value."""
        return self.method.returns.c_equal.format(v=result, expected=self.value.c)

    @property
    def shown(self) -> str:
        """The expected value as the spec writes it, inside a C string literal."""
        return c_string(json.dumps(self.raw) if isinstance(self.raw, str) else str(self.raw))


@dataclass
class Step:
    """One step of an expectation. Blocks are numbered from 0 in the order
    their allocate steps succeed; `block` is that number."""
    kind: str
    bytes: int = 0
    block: int = -1                      # allocate: the number it gets; deallocate: the one it frees
    fails: ExpectedStatus | None = None  # allocate: the failure expected instead of a block
    aligned_to: int = 0                  # allocate: the address is a multiple of this
    method: Method | None = None         # call
    args: list = field(default_factory=list)  # call: a Literal for each of the method's parameters (`with`)
    readings: list = field(default_factory=list)  # equals: Reading each


@dataclass
class Expectation:
    """A behavioural test from the spec: the resource made with `values`
    (every parameter given explicitly, as (Param, Literal); the others at
    their defaults), then `steps`. `live` are the blocks still allocated at
    the end, which every generated test frees before tearing down."""
    name: str
    doc: str
    values: list
    steps: list
    live: list

    @property
    def blocks(self) -> list:
        """(number, bytes) of every block the allocate steps make."""
        return [(s.block, s.bytes) for s in self.steps if s.kind == "allocate" and s.fails is None]

    def size_of(self, block: int) -> int:
        return next(b for n, b in self.blocks if n == block)


@dataclass
class Conformance:
    upstreams_host: list = field(default_factory=list)
    upstreams_gpu: list = field(default_factory=list)
    args: dict = field(default_factory=dict)
    skip: list = field(default_factory=list)
    rejects: list = field(default_factory=list)
    # Environment variables the generated binding tests run with, where a
    # default reads one (logging's CMR_LOG_FILE): "with defaults" uses it.
    environment: dict = field(default_factory=dict)


@dataclass
class Python:
    """How the Python package shows a resource (the spec's [python] table)."""
    class_name: str
    names: dict = field(default_factory=dict)     # parameter -> Python keyword
    aliases: dict = field(default_factory=dict)   # method -> RMM's name for it, besides its own
    hidden: list = field(default_factory=list)    # parameters Python always passes the default for
    extends: str | None = None                    # a class of cmr._extras the generated class derives from
    replaced: list = field(default_factory=list)  # methods `extends` defines with other signatures: not generated


def _listed(field_name: str, item: str) -> property:
    """A read-only bool property: whether `item` is in the list `field_name`."""
    return property(lambda self: item in getattr(self, field_name))


@dataclass
class Resource:
    name: str
    kind: str
    doc: str
    properties: object      # list of flag names, "upstream" or "dynamic"
    thread_safe: bool
    backends: list
    equality: str
    max_alignment: int | None   # None: any power of two
    state: bool
    hooks: list             # of "init", "fini", "stats", "segments", "export_records": the algorithm's own set-up of its struct, its walk
    params: list
    checks: list
    methods: list
    conformance: Conformance
    source: str = ""
    # max_alignment = "upstream": whatever the upstream honours (the resource
    # forwards the alignment and the upstream refuses what it cannot honour).
    alignment_from_upstream: bool = False
    python: Python | None = None
    expectations: list = field(default_factory=list)  # Expectation each ([[expect]])

    @property
    def tested_max_alignment(self) -> int:
        """What the battery may expect of it as an upstream: 0 for any power
        of two; an upstream's own upstream is unknown, so 256 for those."""
        if self.alignment_from_upstream:
            return 256
        return self.max_alignment or 0

    @property
    def handle(self) -> str:
        return f"cmr_{self.name}_resource"

    @property
    def impl(self) -> str:
        return f"cmr_{self.name}_impl"

    # Whether it exists in the host and in the CUDA build.
    host = _listed("backends", "host")
    cuda = _listed("backends", "cuda")

    @property
    def availability_guard(self) -> str | None:
        """Preprocessor condition under which the algorithm exists."""
        if self.host and self.cuda:
            return None
        return "CMR_WITH_CUDA" if self.cuda else "!CMR_WITH_CUDA"

    @property
    def properties_mask(self) -> str:
        if isinstance(self.properties, list):
            return " | ".join(PROPERTY_FLAGS[p] for p in self.properties) or "0u"
        return ""

    @property
    def retained(self) -> list:
        return [p for p in self.params if p.is_upstream and p.retain]

    @property
    def other_refs(self) -> list:
        """Resource parameters besides the upstream (fallback's fallback):
        the binding tests give each the tests' upstream, as the upstream."""
        return [p for p in self.params if p.is_upstream and p is not self.upstream]

    @property
    def held_refs(self) -> list:
        """The retained ones of other_refs: the shared wrapper code holds
        each while the resource lives and shows it to the cycle check as a
        child."""
        return [p for p in self.other_refs if p.retain]

    @property
    def adopts_resources(self) -> bool:
        """Whether a method can give it more resources to hold after
        creation (binning's bins): then its algorithm lists them for the
        cycle check, and those methods refuse one that would close a cycle."""
        return any(p.type.name == "resource_ref" for m in self.methods for p in m.params)

    @property
    def upstream(self) -> Param | None:
        return next((p for p in self.params if p.name == "upstream" and p.is_upstream), None)

    def python_name(self, param: Param) -> str:
        """The Python keyword of a parameter: upstream_mr for the upstream, as RMM's."""
        if param.is_upstream and param.name == "upstream":
            return "upstream_mr"
        return self.python.names.get(param.name, param.name)

    @property
    def python_params(self) -> list:
        """The parameters the Python class takes (all but the hidden ones)."""
        return [p for p in self.params if p not in self.hidden_params]

    @property
    def params_type(self) -> str:
        """The struct of its creation parameters, the first member of its algorithm's struct."""
        return f"cmr_{self.name}_params"

    @property
    def string_params(self) -> list:
        """The parameters the wrapper copies (the caller's strings), so that they outlive the call."""
        return [p for p in self.params if p.type.name == "string"]

    # Whether its algorithm has each hook.
    has_init = _listed("hooks", "init")
    has_fini = _listed("hooks", "fini")
    has_stats = _listed("hooks", "stats")
    has_segments = _listed("hooks", "segments")
    has_export_records = _listed("hooks", "export_records")

    @property
    def stats_doc(self) -> str:
        """What its statistics' memory fields are, for the API reference."""
        if self.kind == "leaf":
            return ("the memory it holds by its own count (held: a driver pool's reserved bytes, expandable's committed granules)." if self.has_stats
                    else "a leaf: bytes held are the bytes it handed out.")
        if self.memory_source == "CMR_MEMORY_OWN":
            return "a suballocator on the kit: every field but the pool counters, from its chunks and free lists."
        return ("its own calls' counts; its upstream's memory fields" +
                (", plus its own retries." if self.has_stats else "."))

    @property
    def memory_source(self) -> str:
        """Where its statistics' memory fields come from (resource_class.h)."""
        if self.kind == "leaf":
            return "CMR_MEMORY_HANDED_OUT"
        return "CMR_MEMORY_OWN" if self.kind == "suballocator" and self.has_stats else "CMR_MEMORY_OF_UPSTREAM"

    @property
    def algorithm_methods(self) -> list:
        """The methods the algorithm file defines (all but stored and counter getters)."""
        return [m for m in self.methods if m.stored is None and m.counter is None]

    @property
    def counters(self) -> list:
        """The fields its counter getters read, in order (their index is the offset table's)."""
        return [m.counter for m in self.methods if m.counter is not None]

    def sample(self, param: Param):
        """A plain value the binding tests give `param` explicitly (a Python
        int, float, bool or str), or None where no plain value serves (refs,
        callbacks, pointers, enums): the conformance argument where it reads
        as a number or string, else, for a number without a default, one
        that passes every check (a default stays: a sample picked blind could
        break a check across parameters)."""
        kind = param.type.name
        arg = self.conformance.args.get(param.name)
        if param.is_callback:
            return kind  # the type table's sample function, forwarding to the tests' upstream
        if kind in ("size_t", "int", "double"):
            match = _PLAIN_NUMBER.match(arg or "")
            if match:
                value = int(match.group(1)) << int(match.group(2) or 0)
                if param.passes(value):
                    return value
            c = param.numeric_constraints
            if param.default is not None:
                return None
            for value in (4096, c.get("min", 0), c.get("max", 0), 1):
                if param.passes(value):
                    return float(value) if kind == "double" else value
            return None
        if kind == "bool":
            return not param.default if isinstance(param.default, bool) else True
        if kind == "string":
            match = _PLAIN_STRING.match(arg or "")
            return match.group(1) if match else None
        return None

    def sample_literal(self, param: Param) -> Literal | None:
        value = self.sample(param)
        if param.is_callback:
            t = param.type
            return Literal(t.py.sample, t.java.sample, t.go.sample, t.cs.sample)
        return None if value is None else literal(param.type.name, value)

    @property
    def callbacks(self) -> list:
        """Its callback-typed parameters (functions each language passes its own way)."""
        return [p for p in self.params if p.is_callback]

    def callback_arg(self, callback: Param) -> Param:
        """The pointer passed to a callback (spec: the parameter `<callback>_arg`):
        a binding passes its own there, what stands for the language's function."""
        return next(p for p in self.params if p.name == f"{callback.name}_arg")

    @property
    def callback_args(self) -> list:
        return [self.callback_arg(p) for p in self.callbacks]

    @property
    def hidden_params(self) -> list:
        """The parameters no binding shows: those Python hides and the callbacks' arguments."""
        return [p for p in self.params if p.name in self.python.hidden or p in self.callback_args]

    def shim(self, language: str) -> str:
        """The create function of a resource with callbacks as a language's
        SWIG interface defines it: each callback's argument is what stands for
        the language's function, the callback itself the type's trampoline."""
        return f"cmr_{SHIM_PREFIXES[language]}_{self.name}_resource_create"

    def shim_params(self, language: str) -> str:
        decls = []
        for p in self.params:
            if p in self.callback_args:
                continue
            decls.append(Param._decl(p.type.swig[language].holder, p.name) if p.is_callback else p.c_decl)
        return ", ".join(decls + [f"{self.handle} **out"])

    def shim_args(self, language: str) -> str:
        args = []
        for p in self.params:
            callback = next((c for c in self.callbacks if self.callback_arg(c) is p), None)
            args.append(p.type.swig[language].trampoline if p.is_callback else callback.name if callback else p.name)
        return ", ".join(args + ["out"])

    @property
    def binding_testable(self) -> bool:
        """Whether the generated binding tests can make it from plain values:
        every parameter an upstream, defaulted or given a sample (a callback's
        forwards to the tests' upstream)."""
        return all(p.is_upstream or p.default is not None or self.sample(p) is not None for p in self.params)

    @property
    def sampled_params(self) -> list:
        """The parameters the binding tests give explicitly (all but the upstream, those with a sample)."""
        return [p for p in self.params if not p.is_upstream and self.sample(p) is not None]

    @property
    def minimal_params(self) -> list:
        """What the binding tests give when they make it "with defaults": the
        parameters without one, each at its sample; every other takes its default."""
        return [p for p in self.sampled_params if p.default is None]

    def sampled_values(self, params) -> list:
        """(Param, Literal) of each of `params` at its sample."""
        return [(p, self.sample_literal(p)) for p in params]

    @property
    def expect_upstream(self) -> bool:
        """Whether its expectations run over an upstream (EXPECT_UPSTREAM over system)."""
        return self.upstream is not None

    @property
    def getters(self) -> list:
        """Methods that take nothing and return a value, handing out nothing: the binding tests call each."""
        return [m for m in self.methods if m.returns is not None and not m.params and not m.hands_out]

    @property
    def java_imports(self) -> list:
        """The java.util classes its Java class uses for its parameters' types."""
        return sorted({name for p in self.params for name in p.type.java.needs_import.split()})

    @property
    def java_params(self) -> list:
        """The parameters Java's constructors take: all but the pointers
        with a default (a FILE *, a callback's argument), for which Java has
        no value."""
        return [p for p in self.params if not (p.type.name == "pointer" and p.default is not None)]

    @property
    def python_methods(self) -> list:
        """The methods the generated Python class defines: all but those its
        hand-written base (python.extends) replaces."""
        return [m for m in self.methods if m.name not in self.python.replaced]

    @property
    def enums(self) -> list:
        return [p for p in self.params if p.type.name == "enum"]
