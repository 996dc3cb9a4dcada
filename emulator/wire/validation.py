"""Requests checked against botocore's service model, written once for every awsJson1.1 and awsQuery
service.

AWS checks every request against its model before an operation runs: a member of the wrong JSON type
is a `SerializationException` (what Coral answers, "... can not be converted to a String"), a missing
required member, a length, a range, a pattern or an enum outside the model a `ValidationException`
with AWS's message ("1 validation error detected: Value 'x' at 'policyName' failed to satisfy
constraint: Member must satisfy regular expression pattern: \\p{Print}+"). `RequestValidator` does the
same from the model botocore ships (the one boto3 serializes with), so that a service's operations
only see what AWS would have let through, and store nothing a later reader (`emulator status`) cannot
print. Members the model does not name are ignored, as AWS ignores them. Where the emulator means to
accept more than AWS (SageMaker's model data as a local path, since S3 cannot be reached), the service
names the shapes whose pattern it widens (`ServiceModel.widened`), and nothing else is widened.

The awsQuery services (STS, CloudFormation) are checked the same way on the request their form
unflattens to (emulator.wire.awsquery.unflatten), whose every value is a string: a number member must
read as one (`TimeoutInMinutes=ten` is refused, as is an integer beyond 32 bits), a boolean as `true` or
`false`, a list or structure must have come as `X.member.N` or `X.Member`; every refusal is then the
query protocol's `ValidationError`. In JSON, an integer member beyond the model's 32 bits (`integer`)
or 64 (`long`), or a 400-digit number where a double belongs, is refused as a wrong type too: it used
to reach the operation, whose `float()` raised OverflowError, a 500.

The model's patterns are Java regular expressions: they are compiled with the `regex` module (Unicode
properties, as Java has them) after translating what it reads differently: Java's POSIX classes
(`\\p{Print}` is printable ASCII in Java, any printable character in `regex`) and UTF-16 surrogate
ranges (`\\uD800\\uDC00-\\uDBFF\\uDFFF`, the supplementary planes). A pattern that still does not
compile is not checked (the other constraints are), and `untranslated_patterns` names it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import botocore.session
import regex
from botocore.model import Shape

from emulator.wire.awserrors import AwsError

MAX_REPORTED = 10
"""AWS lists every violation; the message names the first ten (a body may break thousands)."""
MAX_VALUE_SHOWN = 100
PATTERN_TIMEOUT_S = 1.0
"""A model pattern with nested repetition on a long member could backtrack for minutes; the `regex`
module stops it, and the value is refused as not matching."""

_JAVA_CLASSES = {
    "Print": r"\x20-\x7E",
    "Graph": r"\x21-\x7E",
    "Alnum": r"a-zA-Z0-9",
    "Alpha": r"a-zA-Z",
    "Digit": r"0-9",
    "Upper": r"A-Z",
    "Lower": r"a-z",
    "ASCII": r"\x00-\x7F",
    "XDigit": r"0-9a-fA-F",
    "Space": r" \t\n\x0B\f\r",
    "Punct": r"!-/:-@\[-`{-~",
    "Cntrl": r"\x00-\x1F\x7F",
}
_SURROGATE_PAIRS = r"\uD800\uDC00-\uDBFF\uDFFF"
_SUPPLEMENTARY = r"\U00010000-\U0010FFFF"
untranslated_patterns: set[str] = set()


def _translate(pattern: str) -> str:
    """A Java pattern as the `regex` module reads it the same way."""
    pattern = pattern.replace(_SURROGATE_PAIRS, _SUPPLEMENTARY)
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and pattern.startswith("p{", index + 1):
            name = pattern[index + 3 : pattern.find("}", index)]
            if name in _JAVA_CLASSES:
                ranges = _JAVA_CLASSES[name]
                out.append(ranges if in_class else f"[{ranges}]")
                index += 4 + len(name)
                continue
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        index += 1
    return "".join(out)


@functools.cache
def compiled_pattern(pattern: str) -> regex.Pattern[str] | None:
    try:
        return regex.compile(_translate(pattern))
    except regex.error:
        untranslated_patterns.add(pattern)
        return None


@functools.cache
def service_model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


class _Report:
    def __init__(self) -> None:
        self.violations: list[str] = []
        self.total = 0

    def add(self, path: str, value: Any, constraint: str) -> None:
        self.total += 1
        if len(self.violations) < MAX_REPORTED:
            shown = _shown(value)
            self.violations.append(f"Value {shown} at '{path}' failed to satisfy constraint: {constraint}")


def _shown(value: Any) -> str:
    """A value as AWS quotes it, cut and with control characters escaped, so that the message prints
    as one line of text (a `\\x1b[2J` in a name would clear the terminal that shows the error)."""
    if value is None:
        return "null"
    text = value if isinstance(value, str) else repr(value)
    if len(text) > MAX_VALUE_SHOWN:
        text = f"{text[:MAX_VALUE_SHOWN]}... ({len(text)} characters)"
    escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return f"'{escaped}'"


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "structure": (dict,),
    "map": (dict,),
    "list": (list,),
    "string": (str,),
    "blob": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "long": (int,),
    "float": (int, float),
    "double": (int, float),
    "timestamp": (int, float, str),
}
_INTEGER_BITS = {"integer": 31, "long": 63}
_NUMBERS = ("integer", "long", "float", "double")
_QUERY_INTEGER = regex.compile(r"[-+]?[0-9]{1,20}")


def _reads_as_float(value: int | str) -> bool:
    """Whether `value` converts to a float: an integer of 400 digits does not, nor a word."""
    try:
        float(value)
    except (ValueError, OverflowError):
        return False
    return True


def _fits(kind: str, value: int) -> bool:
    """An integer within the model type's range (a double's, for a float member)."""
    if kind in _INTEGER_BITS:
        return -(2 ** _INTEGER_BITS[kind]) <= value < 2 ** _INTEGER_BITS[kind]
    return _reads_as_float(value)


def _reads_json(kind: str, value: Any) -> bool:
    """Whether a JSON value is of the member's type."""
    if not isinstance(value, _JSON_TYPES.get(kind, (object,))) or (
        kind != "boolean" and isinstance(value, bool)
    ):
        return False
    return not (kind in _NUMBERS and isinstance(value, int)) or _fits(kind, value)


def _reads_query(kind: str, value: Any) -> bool:
    """Whether a query form's value (a string, or what `X.member.N`/`X.Y` unflattened to) is of the
    member's type; `X=` (an empty string) is an empty list."""
    if kind in ("structure", "map"):
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list) or value == ""
    if not isinstance(value, str):
        return False
    if kind == "boolean":
        return value in ("true", "false")
    if kind in _INTEGER_BITS:
        return _QUERY_INTEGER.fullmatch(value) is not None and _fits(kind, int(value))
    return kind not in _NUMBERS or _reads_as_float(value)


def _as_number(kind: str, value: Any) -> float:
    """A number member's value as a number (a query form's string read)."""
    if isinstance(value, str):
        return int(value) if kind in _INTEGER_BITS else float(value)
    return value


def _type_error(path: str, shape: Shape, value: Any, code: str) -> AwsError:
    found = type(value).__name__ if value is not None else "null"
    shown = f" {_shown(value)}" if isinstance(value, str) else ""
    beyond = ""
    if isinstance(value, int) and not isinstance(value, bool) and shape.type_name in _NUMBERS:
        beyond = (
            f": {'a double' if shape.type_name in ('float', 'double') else shape.type_name} cannot hold it"
        )
    return AwsError(
        code,
        f"{found} value{shown} at '{path}' can not be converted to {shape.type_name} ({shape.name}){beyond}",
    )


@dataclass(frozen=True)
class ServiceModel:
    """A service's botocore model (`name`, boto3's service name) and the shapes whose pattern the
    emulator widens: shape name -> a pattern a value may match instead of the model's."""

    name: str
    widened: Mapping[str, str] = field(default_factory=dict)
    invalid_code: str = "ValidationException"
    """The code of a request the model refuses: AWS's JSON `ValidationException`, or the query
    protocol's `ValidationError` (CloudWatch answers its JSON protocol with its query codes)."""
    type_code: str = "SerializationException"
    """The code of a member of the wrong type: what Coral's JSON reader answers, `ValidationError` for a
    query service (its form has no types to mismatch, only values that do not read as one)."""


class RequestValidator:
    """Checks request bodies against the operations of botocore's models, by target prefix (awsJson) or
    service name (awsQuery: `query=True`, every value a string)."""

    def __init__(self, models: Mapping[str, ServiceModel | str], *, query: bool = False) -> None:
        """`models`: target prefix -> the service's model (`SageMaker` -> `sagemaker`)."""
        self._models = {
            prefix: model if isinstance(model, ServiceModel) else ServiceModel(model)
            for prefix, model in models.items()
        }
        self._reads = _reads_query if query else _reads_json
        self._service = ServiceModel("")

    def check(self, prefix: str, operation: str, body: Mapping[str, Any]) -> None:
        """Raise AWS's error for a body the model refuses; a prefix with no model is not checked."""
        service = self._models.get(prefix)
        if service is None:
            return
        self._service = service
        model = service_model(service.name)
        if operation not in model.operation_names:
            return
        shape = model.operation_model(operation).input_shape
        if shape is None:
            return
        report = _Report()
        self._value(shape, body, "", report)
        if report.total:
            plural = "error" if report.total == 1 else "errors"
            raise AwsError(
                service.invalid_code,
                f"{report.total} validation {plural} detected: {'; '.join(report.violations)}",
            )

    def _value(self, shape: Shape, value: Any, path: str, report: _Report) -> None:
        """Iterative, because a body may nest as deep as the JSON parser allowed."""
        pending = [(shape, value, path)]
        while pending:
            shape, value, path = pending.pop()
            kind = shape.type_name
            if not self._reads(kind, value):
                raise _type_error(path or shape.name, shape, value, self._service.type_code)
            if kind == "structure":
                for name in shape.required_members:
                    if value.get(name) is None:
                        report.add(_join(path, name), None, "Member must not be null")
                pending.extend(
                    (member, value[name], _join(path, name))
                    for name, member in shape.members.items()
                    if value.get(name) is not None
                )
            elif kind == "list" and value != "":
                self._length(shape, value, path, report)
                pending.extend(
                    (shape.member, item, f"{path}.{index}.member")
                    for index, item in enumerate(value, start=1)
                )
            elif kind == "map":
                self._length(shape, value, path, report)
                for key, item in value.items():
                    pending.append((shape.key, key, f"{path}.key"))
                    pending.append((shape.value, item, f"{path}.{key}"))
            elif kind in ("string", "blob"):
                self._string(shape, value, path, report)
            elif kind in _NUMBERS:
                self._number(shape, _as_number(kind, value), path, report)

    @staticmethod
    def _length(shape: Shape, value: Any, path: str, report: _Report) -> None:
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if low is not None and len(value) < low:
            report.add(path, value, f"Member must have length greater than or equal to {low}")
        elif high is not None and len(value) > high:
            report.add(path, value, f"Member must have length less than or equal to {high}")

    def _string(self, shape: Shape, value: str, path: str, report: _Report) -> None:
        before = report.total
        self._length(shape, value, path, report)
        enum = shape.metadata.get("enum")
        if enum and value not in enum:
            report.add(path, value, f"Member must satisfy enum value set: [{', '.join(enum)}]")
        pattern = shape.metadata.get("pattern")
        if pattern and report.total == before and shape.type_name == "string":
            widened = self._service.widened.get(shape.name)
            if not _matches(pattern, value) and not (widened and _matches(widened, value)):
                report.add(path, value, f"Member must satisfy regular expression pattern: {pattern}")

    @staticmethod
    def _number(shape: Shape, value: float, path: str, report: _Report) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            report.add(path, value, "Member must be a finite number")
            return
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if low is not None and value < low:
            report.add(path, value, f"Member must have value greater than or equal to {low}")
        elif high is not None and value > high:
            report.add(path, value, f"Member must have value less than or equal to {high}")


def _matches(pattern: str, value: str) -> bool:
    compiled = compiled_pattern(pattern)
    try:
        return compiled is None or compiled.fullmatch(value, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        return False


def _join(path: str, name: str) -> str:
    return f"{path}.{_camel(name)}" if path else _camel(name)
