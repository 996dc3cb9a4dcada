"""A template read, its intrinsic functions and creation order, resolved against a `Scope` (no I/O).

- `parse` reads a JSON template and checks the shape of what the emulator reads of it: an object of at
  most MAX_DEPTH levels, with Resources (each with a Type), and Parameters and Outputs of objects.
- `resolve` replaces `Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`, `Fn::Select`, `Fn::Split`,
  `Fn::ImportValue`, `Fn::If` and the pseudo parameters with their values: the stack's parameters,
  the account and region, each resource's physical id and attributes as it is created, and the
  exports of the stacks that exist.
- `condition` evaluates the template's `Conditions` (`Fn::Equals`, `Fn::And`, `Fn::Or`, `Fn::Not`,
  `Condition`).
- `creation_order` puts each resource after what it references or `DependsOn`, template order
  otherwise, as CloudFormation creates them (deletion is the reverse).

What cannot be resolved is a `TemplateError`, whose text names the function and the stack; the
service turns it into the failed resource's status reason or a `ValidationError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SUB_VARIABLE = re.compile(r"\$\{([^}!]+)\}")
MAX_DEPTH = 100
"""How deep a template may nest. A CDK template nests about 10 levels. 100,000 levels ran the JSON
parser out of recursion, a 500 in JSON where CloudFormation answers XML; and one just under the parser's
own limit (about 1,000) could still run out resolving its intrinsics or writing it back (GetTemplate)."""


class TemplateError(ValueError):
    """A template the emulator cannot apply: an intrinsic, a reference or a cycle it cannot resolve."""


def parse(text: str) -> dict[str, Any]:
    """A JSON template, as far as the emulator reads it; a `TemplateError` (CloudFormation's "Template
    format error") for anything else."""
    try:
        template = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TemplateError(f"Template format error: the emulator reads JSON templates ({exc})") from exc
    if _deeper_than(template, MAX_DEPTH):
        raise TemplateError(f"Template format error: the template nests deeper than {MAX_DEPTH} levels")
    resources = template.get("Resources") if isinstance(template, dict) else None
    if not isinstance(resources, dict) or not resources:
        raise TemplateError("Template format error: At least one Resources member must be defined.")
    for logical, raw in resources.items():
        if not isinstance(raw, dict) or not isinstance(raw.get("Type"), str):
            raise TemplateError(f"Template format error: resource {logical} has no Type")
    for section in ("Parameters", "Outputs", "Conditions"):
        entries = template.get(section) or {}
        if not isinstance(entries, dict) or (
            section != "Conditions" and not all(isinstance(entry, dict) for entry in entries.values())
        ):
            raise TemplateError(f"Template format error: {section} is an object of named objects")
    return template


def _deeper_than(value: Any, limit: int) -> bool:
    pending = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return True
            pending.extend(
                (child, depth + 1) for child in (node.values() if isinstance(node, dict) else node)
            )
    return False


@dataclass
class Scope:
    """What intrinsics resolve against: the account, the region, the parameters and every resource
    made so far."""

    account: str
    region: str
    stack: str
    stack_id: str = ""
    partition: str = "aws"
    url_suffix: str = "amazonaws.com"
    parameters: dict[str, Any] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    attrs: dict[tuple[str, str], str] = field(default_factory=dict)
    exports: Mapping[str, str] = field(default_factory=dict)
    conditions: Mapping[str, Any] = field(default_factory=dict)

    def ref(self, name: str) -> Any:
        values = {
            "AWS::AccountId": self.account,
            "AWS::Region": self.region,
            "AWS::Partition": self.partition,
            "AWS::URLSuffix": self.url_suffix,
            "AWS::StackName": self.stack,
            "AWS::StackId": self.stack_id,
            "AWS::NoValue": None,
        }
        for known in (values, self.parameters, self.refs):
            if name in known:
                return known[name]
        raise TemplateError(f"{self.stack}: Ref {name} names nothing created before it")

    def attribute(self, logical: str, attribute: str) -> str:
        if (logical, attribute) not in self.attrs:
            raise TemplateError(f"{self.stack}: Fn::GetAtt {logical}.{attribute} is not known here")
        return self.attrs[(logical, attribute)]


def _sub(arg: Any, scope: Scope) -> str:
    text, variables = (arg, {}) if isinstance(arg, str) else arg
    local = {name: str(resolve(value, scope)) for name, value in variables.items()}

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in local:
            return local[name]
        if "." in name:
            return str(scope.attribute(*name.split(".", 1)))
        return str(scope.ref(name))

    return SUB_VARIABLE.sub(substitute, text)


def _function(key: str, arg: Any, scope: Scope) -> Any:
    if key == "Ref":
        return scope.ref(arg)
    if key == "Fn::GetAtt":
        logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
        return scope.attribute(logical, resolve(attribute, scope))
    if key == "Fn::Join":
        separator, items = arg
        return separator.join(str(item) for item in resolve(items, scope))
    if key == "Fn::Sub":
        return _sub(arg, scope)
    if key == "Fn::Select":
        index, items = resolve(arg, scope)
        return items[int(index)]
    if key == "Fn::Split":
        separator, text = resolve(arg, scope)
        return str(text).split(separator)
    if key == "Fn::If":
        name, when_true, when_false = arg
        return resolve(when_true if condition(name, scope) else when_false, scope)
    if key == "Fn::ImportValue":
        name = resolve(arg, scope)
        if name not in scope.exports:
            raise TemplateError(f"{scope.stack}: Fn::ImportValue {name}: no stack exports it")
        return scope.exports[name]
    raise TemplateError(f"{scope.stack}: the emulator cannot resolve {key}")


def resolve(value: Any, scope: Scope) -> Any:
    """`value` with every intrinsic function replaced by its value (`AWS::NoValue` drops a member)."""
    if isinstance(value, list):
        return [item for item in (resolve(item, scope) for item in value) if item is not None]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref" or key.startswith("Fn::"):
            return _function(key, arg, scope)
    resolved = {key: resolve(item, scope) for key, item in value.items()}
    return {key: item for key, item in resolved.items() if item is not None}


def condition(name: str, scope: Scope) -> bool:
    """The truth of the template's condition `name`."""
    if name not in scope.conditions:
        raise TemplateError(f"{scope.stack}: no condition named {name}")
    return _truth(scope.conditions[name], scope)


def _truth(value: Any, scope: Scope) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Condition":
            return condition(arg, scope)
        if key == "Fn::Equals":
            left, right = resolve(arg, scope)
            return str(left) == str(right)
        if key == "Fn::And":
            return all(_truth(item, scope) for item in arg)
        if key == "Fn::Or":
            return any(_truth(item, scope) for item in arg)
        if key == "Fn::Not":
            return not _truth(arg[0], scope)
    raise TemplateError(f"{scope.stack}: the emulator cannot evaluate the condition {value!r}")


def references(value: Any) -> set[str]:
    """The names `value` references (Ref, Fn::GetAtt, and `${X}` / `${X.Attr}` in Fn::Sub)."""
    if isinstance(value, list):
        return set().union(*(references(item) for item in value))
    if not isinstance(value, dict):
        return set()
    found: set[str] = set()
    for key, arg in value.items():
        if key == "Ref" and isinstance(arg, str):
            found.add(arg)
        elif key == "Fn::GetAtt":
            found.add(arg[0] if isinstance(arg, list) else arg.split(".", 1)[0])
        elif key == "Fn::Sub":
            text = arg if isinstance(arg, str) else arg[0]
            found |= {name.split(".", 1)[0] for name in SUB_VARIABLE.findall(text)}
            found |= references(arg[1:] if isinstance(arg, list) else [])
        else:
            found |= references(arg)
    return found


def creation_order(resources: Mapping[str, Any]) -> list[str]:
    """Logical ids, each after what it references or `DependsOn` (template order otherwise)."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(logical: str) -> None:
        if logical in order:
            return
        if logical in visiting:
            raise TemplateError(f"circular reference through {logical}")
        visiting.add(logical)
        raw = resources[logical]
        depends = raw.get("DependsOn", [])
        named = references(raw.get("Properties", {})) | set(
            [depends] if isinstance(depends, str) else depends
        )
        for name in sorted(named):
            if name in resources:
                visit(name)
        visiting.discard(logical)
        order.append(logical)

    for logical in resources:
        visit(logical)
    return order
