"""Names in a template that become paths on this machine (emulator.controller.paths): a bucket named by
an absolute path or by `../..`, a deployment's key prefix that climbs out of its bucket, an image asset's
Dockerfile outside the repository. Before the check, such a bucket was CREATE_COMPLETE and DeleteStack
then deleted the directory it named, canary and all; now the resource fails as S3 fails it (400
InvalidBucketName), the stack rolls back, and nothing outside the emulator's home is touched."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from emulator.config import EmulatorConfig
from emulator.controller.paths import UnsafePath, within
from emulator.controller.store import Store
from emulator.images import ImageBuildError
from emulator.images.build import BuildRequest, source_hash
from emulator.services.cloudformation.control import CloudFormationControl

pytestmark = pytest.mark.reliability


class NoPeers:
    def call(self, service: str, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        return {}

    def offers(self, service: str) -> bool:
        return False


def _run(home: Path, resources: dict[str, Any], name: str = "Hostile") -> tuple[CloudFormationControl, Any]:
    store = Store()
    cloudformation = CloudFormationControl(EmulatorConfig(home=home), store, NoPeers(), images=None)  # type: ignore[arg-type]

    async def create() -> Any:
        body = {"StackName": name, "TemplateBody": json.dumps({"Resources": resources})}
        stack_id = cloudformation.CreateStack(body)["StackId"]
        await store.stacks[stack_id].task
        return store.stacks[stack_id]

    return cloudformation, asyncio.run(create())


def _delete(cloudformation: CloudFormationControl, stack: Any) -> None:
    async def delete() -> None:
        cloudformation.DeleteStack({"StackName": stack.name})
        if stack.task is not None:
            await stack.task

    asyncio.run(delete())


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "canary.txt").write_text("still here")
    return victim


def _bucket(name: str) -> dict[str, Any]:
    return {"Bucket": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": name}}}


@pytest.mark.parametrize("kind", ["absolute", "climbing", "climbing-with-dots-inside"])
def test_a_bucket_named_by_a_path_fails_as_s3_fails_it_and_the_host_directory_survives(
    tmp_path: Path, canary: Path, kind: str
) -> None:
    home = tmp_path / "home"
    name = {
        "absolute": str(canary),
        "climbing": "../../victim",
        "climbing-with-dots-inside": "a/../../../victim",
    }[kind]
    cloudformation, stack = _run(home, _bucket(name))
    failed = [e for e in stack.events if e.status == "CREATE_FAILED" and e.logical_id == "Bucket"]
    assert failed and "InvalidBucketName" in failed[0].reason, stack.events
    assert stack.status == "ROLLBACK_COMPLETE"
    _delete(cloudformation, stack)
    assert (canary / "canary.txt").read_text() == "still here"


@pytest.mark.parametrize(
    "name", ["ab", "a" * 64, "Upper-case", "under_score", "-leading", "trailing-", "two..dots", "192.168.1.1"]
)
def test_a_bucket_name_s3_refuses_is_refused(tmp_path: Path, name: str) -> None:
    _, stack = _run(tmp_path / "home", _bucket(name))
    assert stack.status == "ROLLBACK_COMPLETE"
    assert not (tmp_path / "home" / "buckets" / name).exists()


def test_a_valid_bucket_is_a_directory_of_the_home_and_goes_with_the_stack(tmp_path: Path) -> None:
    cloudformation, stack = _run(tmp_path / "home", _bucket("voice-agent.models-1"))
    assert stack.status == "CREATE_COMPLETE", stack.events
    directory = tmp_path / "home" / "buckets" / "voice-agent.models-1"
    assert directory.is_dir()
    _delete(cloudformation, stack)
    assert not directory.exists()


def test_a_model_uri_that_climbs_out_of_its_bucket_fails_the_model(tmp_path: Path, canary: Path) -> None:
    resources = {
        "Model": {
            "Type": "AWS::SageMaker::Model",
            "Properties": {
                "ExecutionRoleArn": "arn:aws:iam::123456789012:role/r",
                "PrimaryContainer": {
                    "Image": "kokoro-tts:latest",
                    "ModelDataUrl": "s3://models/../../../victim",
                },
            },
        }
    }
    _, stack = _run(tmp_path / "home", resources)
    failed = [e for e in stack.events if e.status == "CREATE_FAILED" and e.logical_id == "Model"]
    assert failed and "climbs out" in failed[0].reason
    assert (canary / "canary.txt").exists()


def test_paths_stay_under_their_root_whatever_the_name_says(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    assert within(root, "a", "b/c") == (root / "a" / "b" / "c").resolve()
    for names in (("/etc",), ("..",), ("a", "../../b"), ("link", "x"), ("nul\0l",)):
        with pytest.raises(UnsafePath):
            within(root, *names)


@pytest.mark.parametrize("dockerfile", ["/etc/passwd", "../outside/Dockerfile", "tts/../../x/Dockerfile"])
def test_an_image_asset_dockerfile_outside_the_repository_is_refused_before_it_is_read(dockerfile: str):
    with pytest.raises(ImageBuildError, match="not in this repository"):
        BuildRequest("voice-agent-aws-rehearsal/x:1", dockerfile)
    with pytest.raises(ImageBuildError, match="not in this repository"):
        source_hash(dockerfile)
