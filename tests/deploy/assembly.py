"""A synthesized cloud assembly read back for the stack tests: templates, staged image assets, stack
dependencies, and CloudFormation values rendered as readable strings."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template

from deploy.__main__ import main as deploy_main


class Assembly:
    """The synthesized cloud assembly on disk, as `cdk deploy --app` reads it."""

    def __init__(self, directory: Path, output: str = ""):
        self.directory = directory
        self.output = output
        self.manifest = json.loads((directory / "manifest.json").read_text())

    def template(self, stack: str) -> Template:
        return Template.from_json(json.loads((self.directory / f"{stack}.template.json").read_text()))

    def docker_images(self, stack: str) -> list[dict[str, Any]]:
        assets = json.loads((self.directory / f"{stack}.assets.json").read_text())
        return [image["source"] | {"hash": key} for key, image in assets.get("dockerImages", {}).items()]

    def dependencies(self, stack: str) -> set[str]:
        return {
            dep
            for dep in self.manifest["artifacts"][stack].get("dependencies", [])
            if not dep.endswith(".assets")
        }


def render(value: Any) -> Any:
    """A CloudFormation value as one readable string: pseudo parameters and imports as ${...}."""
    if isinstance(value, dict) and len(value) == 1:
        [(key, arg)] = value.items()
        if key == "Ref":
            return f"${{{arg}}}"
        if key == "Fn::Join":
            return arg[0].join(str(render(part)) for part in arg[1])
        if key == "Fn::ImportValue":
            return "${Import}"
        if key == "Fn::GetAtt":
            return f"${{{arg[0]}.{arg[1]}}}"
        if key == "Fn::Sub":
            return arg
    if isinstance(value, dict):
        return {key: render(item) for key, item in value.items()}
    if isinstance(value, list):
        return [render(item) for item in value]
    return value


def statements(template: Template, logical_type: str = "AWS::IAM::Role") -> dict[str, dict[str, Any]]:
    """Sid -> statement (actions and resources as lists of rendered strings) of the one role."""
    [role] = template.find_resources(logical_type).values()
    found = {}
    for policy in role["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            actions, resources = statement["Action"], render(statement["Resource"])
            found[statement["Sid"]] = statement | {
                "Action": actions if isinstance(actions, list) else [actions],
                "Resource": resources if isinstance(resources, list) else [resources],
            }
    return found


def synthesize(outdir: Path, *argv: str) -> Assembly:
    """`python -m deploy synth --outdir OUTDIR ARGV`, what it printed kept with the assembly."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert deploy_main(["synth", "--outdir", str(outdir), *argv]) == 0
    return Assembly(outdir, printed.getvalue())
