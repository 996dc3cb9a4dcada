"""`--target local`: the deploy rehearsed on the emulator that `python -m emulator env` points at.

`LocalToolkit` is the emulator's `Toolkit` (deploy/toolkit.py), in the place of `CdkToolkit`:

- `synth` is `CdkToolkit.synth`: the same stacks, in the same cloud assembly.
- `deploy(stacks)` does what CloudFormation would, per stack: builds the stack's image assets from
  `<stack>.assets.json` (same Dockerfile, linux/amd64) with the emulator's own image builder, run as
  `python -m emulator build` (deploy imports no emulator code), tagged
  `voice-agent-aws-rehearsal/<name>:<asset hash>`; then creates the template's resources through boto3
  on the emulator (`deploy/template_calls.py`), printing every property the emulator cannot honour.
  AgentCore runs linux/arm64; the rehearsal builds and runs the agent's image for linux/amd64 and says so.
- `destroy(parts, ...)` deletes, newest first, what the record (`<rehearsal_dir>/rehearsal.json`) says
  was made: runtime endpoints and runtimes, endpoints (waiting until their containers are gone),
  configs, models, the local buckets, and the image tags. A record that cannot be read (not JSON, not
  the record's shape, the directory a file) is a `RehearsalError` that says so and leaves it as it is.

The clients reach the emulator through its variables (boto3's `AWS_ENDPOINT_URL_<SERVICE>`, region
and credentials, given to boto3 explicitly: `Aws.from_variables`): the ones already in the environment
(`eval "$(python -m emulator env)"`, an emulator started with `--home H` included), else what
`python -m emulator env --json` prints. The prerequisites are the emulator's identity (its STS), as
there is no CDK bootstrap or CLI to check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from botocore.exceptions import ClientError

from deploy.aws import Aws, endpoint_variable
from deploy.cdk_toolkit import CdkToolkit
from deploy.config import DeployConfig
from deploy.errors import DeployError
from deploy.part import Identity, Part
from deploy.prereqs import require_identity
from deploy.template_calls import Call, LocalAssets, Scope, StackResult, apply_stack, copy_directory

EMULATOR_COMMAND = (sys.executable, "-m", "emulator")
START_HINT = "start one: python -m emulator up --runtime docker --detach -f compose/empty.yaml"
IMAGE_REPOSITORY = "voice-agent-aws-rehearsal"
BUILD_PLATFORM = "linux/amd64"
RECORD_NAME = "rehearsal.json"
GONE = {"ValidationException", "ResourceNotFoundException"}
"""The errors SageMaker (an unknown endpoint) and AgentCore answer for what no longer exists."""
SERVICES = ("sts", "sagemaker", "application-autoscaling", "bedrock-agentcore-control")
"""The services the rehearsal calls: with all their endpoints in the environment, it uses those."""

Echo = Callable[[str], None]


class RehearsalError(DeployError):
    """The rehearsal cannot go on (no emulator, a build or a call that failed)."""


def emulator_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that point boto3 at the running emulator: the environment's, when it names every
    service the rehearsal calls, else `python -m emulator env --json`'s (EMULATOR_HOME finds the
    emulator's home)."""
    environ = os.environ if environ is None else environ
    if all(environ.get(endpoint_variable(service)) for service in SERVICES):
        return dict(environ)
    result = subprocess.run([*EMULATOR_COMMAND, "env", "--json"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no answer"])[-1]
        raise RehearsalError(f"no emulator to rehearse on ({reason}); {START_HINT}")
    return json.loads(result.stdout)


def image_tag(dockerfile: str, asset_hash: str) -> str:
    """`tts/Dockerfile.gpu` -> `voice-agent-aws-rehearsal/tts-gpu:<hash>`; `agent/Dockerfile` ->
    `.../agent:<hash>` (the emulator runs an image whose name ends in `agent` on the host's network,
    where it reaches the emulator)."""
    path = PurePosixPath(dockerfile)
    suffix = path.suffix.lstrip(".")
    name = path.parent.name + (f"-{suffix}" if suffix else "")
    return f"{IMAGE_REPOSITORY}/{name}:{asset_hash[:16]}"


def _is_record(record: Any) -> bool:
    """The record's shape: stacks by name, each with its undo calls and image tags; the exports."""
    if not isinstance(record, dict) or not isinstance(record.get("stacks"), dict):
        return False
    if not isinstance(record.get("exports", {}), dict):
        return False
    for entry in record["stacks"].values():
        if not isinstance(entry, dict) or not isinstance(entry.get("images", []), list):
            return False
        undo = entry.get("undo", [])
        if not isinstance(undo, list) or not all(
            isinstance(call, dict)
            and isinstance(call.get("service"), str)
            and isinstance(call.get("operation"), str)
            and isinstance(call.get("params"), dict)
            for call in undo
        ):
            return False
    return True


class LocalToolkit:
    def __init__(self, config: DeployConfig, aws: Aws, echo: Echo = print):
        self.config = config
        self.aws = aws
        self.echo = echo
        self._clients: dict[str, Any] = {}

    @property
    def record_path(self) -> Path:
        return self.config.rehearsal_dir / RECORD_NAME

    def load(self) -> dict[str, Any]:
        """The record of what the rehearsal made; refused (never overwritten) when it cannot be read."""
        directory = self.config.rehearsal_dir
        if directory.exists() and not directory.is_dir():
            raise RehearsalError(f"the rehearsal directory {directory} is a file (DEPLOY_REHEARSAL_DIR?)")
        if not self.record_path.exists():
            return {"stacks": {}, "exports": {}}
        fix = "fix it, or remove it once what it lists is deleted by hand"
        try:
            record = json.loads(self.record_path.read_text())
        except (OSError, ValueError) as exc:
            raise RehearsalError(
                f"the rehearsal record {self.record_path} cannot be read ({exc}); {fix}"
            ) from exc
        if not _is_record(record):
            raise RehearsalError(
                f"the rehearsal record {self.record_path} is not a record of stacks "
                f"({{'stacks': {{STACK: {{'undo': [...], 'images': [...]}}}}, 'exports': {{}}}}); {fix}"
            )
        return record

    def save(self, record: dict[str, Any]) -> None:
        self.record_path.parent.mkdir(parents=True, exist_ok=True)
        self.record_path.write_text(json.dumps(record, indent=2))

    def check(self, config: DeployConfig, aws: Aws, parts: Sequence[Part]) -> Identity:
        """The prerequisite of a rehearsal: an emulator that answers (its STS)."""
        return require_identity(aws)

    def synth(self, parts: Sequence[Part]) -> Path:
        return CdkToolkit(self.config).synth(parts)

    def call(self, call: Call) -> dict[str, Any]:
        params = call.params
        if call.service == "local":
            if call.operation == "make_directory":
                Path(params["path"]).mkdir(parents=True, exist_ok=True)
            elif call.operation == "remove_directory":
                shutil.rmtree(params["path"], ignore_errors=True)
            elif call.operation == "copy_directory":
                copy_directory(Path(params["source"]), Path(params["target"]), params["prune"])
            else:
                raise RehearsalError(f"unknown local operation {call.operation}")
            return {}
        if call.service not in self._clients:
            self._clients[call.service] = self.aws.client(call.service)
        try:
            return getattr(self._clients[call.service], call.operation)(**params)
        except ClientError as exc:
            raise RehearsalError(f"{call.service} {call.operation}: {exc}") from exc

    def build_images(self, stack: str) -> dict[str, str]:
        """Build the stack's image assets (skipping a tag already built); asset hash -> local tag."""
        manifest = json.loads((self.config.outdir / f"{stack}.assets.json").read_text())
        tags = {}
        for asset_hash, image in manifest.get("dockerImages", {}).items():
            source = image["source"]
            dockerfile = source.get("dockerFile", "Dockerfile")
            if source.get("dockerBuildArgs"):
                raise RehearsalError(
                    f"{stack}: {dockerfile} has build arguments {sorted(source['dockerBuildArgs'])}, "
                    "which the emulator's image builder does not take (only BASE_IMAGE)"
                )
            tag = tags[asset_hash] = image_tag(dockerfile, asset_hash)
            platform = source.get("platform", BUILD_PLATFORM)
            if platform != BUILD_PLATFORM:
                self.echo(
                    f"{stack}: the image is {platform} on AWS; the rehearsal builds and runs a "
                    f"{BUILD_PLATFORM} build of {dockerfile} instead"
                )
            if self._image_present(tag):
                self.echo(f"{stack}: image {tag} already built")
                continue
            self.echo(f"{stack}: building {dockerfile} as {tag} ({BUILD_PLATFORM}, the emulator's builder)")
            argv = [*EMULATOR_COMMAND, "build", "--dockerfile", dockerfile, "--tag", tag]
            result = subprocess.run([*argv, "--platform", BUILD_PLATFORM], check=False)
            if result.returncode != 0:
                raise RehearsalError(f"{stack}: building {tag} failed (exit {result.returncode}); see above")
        return tags

    def _image_present(self, tag: str) -> bool:
        argv = [self.config.docker_command, "image", "inspect", tag]
        return subprocess.run(argv, capture_output=True, check=False).returncode == 0

    def deploy(self, stacks: Sequence[str]) -> None:
        identity = require_identity(self.aws)
        record = self.load()
        scope = Scope(identity.account, identity.region, exports=record.setdefault("exports", {}))
        for stack in stacks:
            if stack in record["stacks"]:
                raise RehearsalError(f"{stack} is already rehearsed; `destroy --target local` first")
            images = self.build_images(stack)
            template = json.loads((self.config.outdir / f"{stack}.template.json").read_text())
            assets = LocalAssets(self.config.outdir, self.config.rehearsal_dir / "buckets", images)
            result = StackResult()
            try:
                apply_stack(stack, template, scope, assets, self.call, result)
            finally:
                record["stacks"][stack] = {
                    "images": sorted(images.values()),
                    "undo": [vars(call) for call in result.undo],
                    "outputs": result.outputs,
                    "unhonoured": result.unhonoured,
                }
                record["exports"] = scope.exports
                self.save(record)
            for line in result.unhonoured:
                self.echo(f"{stack}: {line}")
            for name, value in result.outputs.items():
                if not name.startswith("ExportsOutput"):  # CDK's cross-stack exports, named by hash
                    self.echo(f"{stack}: output {name} = {value}")

    def destroy(self, parts: Sequence[Part], aws: Aws, identity: Identity, echo: Echo) -> str:
        """Delete what the rehearsal of `parts` made, newest first; the line saying what is left."""
        record = self.load()
        kept: list[str] = []
        for stack in [stack for part in reversed(parts) for stack in reversed(part.stacks)]:
            entry = record["stacks"].get(stack)
            if entry is None:
                continue
            undo_calls, images = entry.get("undo", []), entry.get("images", [])
            echo(f"{stack}: deleting {len(undo_calls)} resource(s) and {len(images)} image tag(s)")
            for undo in reversed(undo_calls):
                self._undo(Call(**undo))
            for tag in images:
                argv = [self.config.docker_command, "image", "rm", tag]
                subprocess.run(argv, capture_output=True, check=False)
                if self._image_present(tag):
                    kept.append(tag)
            del record["stacks"][stack]
            self.save(record)
        if kept:
            raise RehearsalError(
                f"image tag(s) {', '.join(kept)} could not be removed (a container uses them?)"
            )
        if record["stacks"]:
            return f"rehearsal: still rehearsed: {', '.join(record['stacks'])}"
        self.record_path.unlink(missing_ok=True)
        shutil.rmtree(self.config.rehearsal_dir / "buckets", ignore_errors=True)
        return "rehearsal: nothing left (containers, image tags, buckets and the record are gone)"

    def _undo(self, call: Call) -> None:
        try:
            self.call(call)
        except RehearsalError as exc:
            error = exc.__cause__
            if isinstance(error, ClientError) and error.response["Error"]["Code"] in GONE:
                return
            raise
        if call.operation in {"delete_endpoint", "delete_agent_runtime"}:
            self._wait_gone(call)

    def _wait_gone(self, call: Call) -> None:
        """Until the deleted endpoint or runtime is gone, its containers with it."""
        describe = {"delete_endpoint": "describe_endpoint", "delete_agent_runtime": "get_agent_runtime"}
        probe = Call(call.service, describe[call.operation], call.params)
        deadline = time.monotonic() + self.config.wait_timeout_s
        while time.monotonic() < deadline:
            try:
                self.call(probe)
            except RehearsalError as exc:
                error = exc.__cause__
                if isinstance(error, ClientError) and error.response["Error"]["Code"] in GONE:
                    return
                raise
            time.sleep(min(self.config.wait_delay_s, 1.0))
        raise RehearsalError(
            f"{call.operation} {call.params}: still there after {self.config.wait_timeout_s:g} s"
        )
