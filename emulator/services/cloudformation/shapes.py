"""What CloudFormation's requests and templates give, checked and typed: a stack's name, template and
parameters (CreateStack's request), an image asset of its cloud assembly; an S3 bucket's name held to
S3's rules, and a key or asset held under its root (a template names them, and a name like `/home/me`
or `../..` would otherwise create, then delete with the stack, a directory of the host); and what a
resource type makes (`Made`) and the steps that delete it (`Undo`, each a `Call` of another service's
operation)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from emulator.controller.paths import UnsafePath, within
from emulator.services.cloudformation.errors import validation
from emulator.services.cloudformation.template import TemplateError, parse

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IP_ADDRESS = re.compile(r"\d{1,3}(\.\d{1,3}){3}")
_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def bucket_name(name: object) -> str:
    """`name` if S3 would create a general purpose bucket by it; TemplateError with S3's 400 otherwise
    (3-63 characters of a-z, 0-9, `.` and `-`, a letter or digit at each end, no `..`, not an IP
    address, none of S3's reserved prefixes and suffixes)."""
    text = str(name)
    if (
        not isinstance(name, str)
        or not _BUCKET.fullmatch(text)
        or ".." in text
        or _IP_ADDRESS.fullmatch(text)
        or text.startswith(_RESERVED_PREFIXES)
        or text.endswith(_RESERVED_SUFFIXES)
    ):
        raise TemplateError(
            f"Bucket name {text[:100]!r} is not valid: 3-63 characters of a-z, 0-9, '.' and '-', "
            "beginning and ending with a letter or digit (Service: S3, Status Code: 400, "
            "Error Code: InvalidBucketName)"
        )
    return text


def inside(root: Path, *names: str) -> Path:
    """A key or asset of a template as a path under `root`; TemplateError for one that leaves it."""
    try:
        return within(root, *names)
    except UnsafePath as exc:
        raise TemplateError(f"not a key the emulator keeps locally: {exc}") from exc


def stack_name(body: dict[str, Any]) -> str:
    name = body.get("StackName")
    if not isinstance(name, str) or not name:
        raise validation("StackName is required")
    return name


def template_of(body: dict[str, Any]) -> tuple[dict[str, Any], Path | None]:
    """The request's template, parsed within its bounds, and the file it came from (its cloud assembly's
    assets are beside it), if any."""
    if body.get("TemplateBody"):
        text, assembly = str(body["TemplateBody"]), None
    elif body.get("TemplateURL"):
        url = urlparse(str(body["TemplateURL"]))
        if url.scheme != "file":
            raise validation(
                "TemplateURL must be the file:// URL of a template on this machine (S3 is not emulated)"
            )
        path = Path(unquote(url.path))
        try:
            text = path.read_text()
        except OSError as exc:
            raise validation(f"TemplateURL {body['TemplateURL']} cannot be read: {exc.strerror}") from exc
        assembly = path
    else:
        raise validation("Either Template URL or Template Body must be specified.")
    try:
        return parse(text), assembly
    except TemplateError as exc:
        raise validation(str(exc)) from exc


def parameters(template: dict[str, Any], body: dict[str, Any]) -> dict[str, str]:
    """Each parameter the template declares, given or defaulted; one not declared or without a value
    is refused."""
    declared = template.get("Parameters") or {}
    given = {
        str(p.get("ParameterKey")): str(p.get("ParameterValue", "")) for p in body.get("Parameters") or []
    }
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise validation(f"Parameters: {unknown} do not exist in the template")
    values = {name: given.get(name, spec.get("Default")) for name, spec in declared.items()}
    missing = sorted(name for name, value in values.items() if value is None)
    if missing:
        raise validation(f"Parameters: {missing} must have values")
    return {name: str(value) for name, value in values.items()}


@dataclass(frozen=True)
class ImageAsset:
    """One image asset that `<stack>.assets.json` names: its Dockerfile (in the repository, the build
    context), its hash, its build arguments (the CDK's `dockerBuildArgs`), the platform it names, and
    whether the stack asks for the engine's platform instead."""

    dockerfile: str
    asset_hash: str
    build_args: Mapping[str, str]
    platform: str | None = None
    """The platform the asset names (the agent's linux/arm64), None for the builder's own."""
    host_platform: bool = False
    """The stack's BUILD_PLATFORM_TAG asks for the engine's own platform instead (faster)."""


BUILD_PLATFORM_TAG = "emulator:build-platform"
"""A stack tag of the emulator's own (AWS has none such): `engine` builds the stack's image assets for the
Docker engine's platform instead of the one each names (`deploy --target local --host-platform`: the
agent's linux/arm64 runs under QEMU here, minutes slower)."""
ENGINE_PLATFORM = "engine"


@dataclass(frozen=True)
class Call:
    service: str
    operation: str
    body: dict[str, Any]


@dataclass(frozen=True)
class Undo:
    """One step of deleting a resource: a call, then (`gone_when`) a read polled until it answers
    not-found (an endpoint's or runtime's containers stopped), or a local directory removed."""

    call: Call | None = None
    gone_when: Call | None = None
    directory: Path | None = None


@dataclass
class Made:
    physical_id: str
    attrs: dict[str, str] = field(default_factory=dict)
    undo: tuple[Undo, ...] = ()
    note: str | None = None
