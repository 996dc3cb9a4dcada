"""The emulator's manifests are written from the product's definition: the committed compose/*.yaml are
exactly what `python -m deploy manifests` writes (edit deploy/product.py, then run it), `--check` names a
file that drifted, and the emulator reads what they say (resources, images, the dashboard)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deploy.cli import main as deploy_main
from deploy.manifests import render
from deploy.product import FIRST_AUDIO_ALARM_MS, PRODUCT
from emulator.manifest import DEFAULT_MANIFEST, VOICE_MANIFEST, load_manifest
from emulator.services.cloudwatch.control import CloudWatchControl
from emulator.services.cloudwatch.runtime import Metrics
from tests.support.paths import REPO

COMPOSE = REPO / "compose"


def test_the_committed_manifests_are_what_the_definition_writes():
    for name, text in render(PRODUCT, FIRST_AUDIO_ALARM_MS).items():
        assert (COMPOSE / name).read_text() == text, (
            f"compose/{name} differs from deploy/product.py: run `python -m deploy manifests`"
        )


def test_check_names_a_drifted_manifest_and_writing_mends_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    written = tmp_path / "compose"
    assert deploy_main(["manifests", "--outdir", str(written)]) == 0
    assert sorted(path.name for path in written.iterdir()) == sorted(render(PRODUCT, FIRST_AUDIO_ALARM_MS))
    assert deploy_main(["manifests", "--check", "--outdir", str(written)]) == 0
    listen = written / "listen.yaml"
    listen.write_text(listen.read_text().replace("InitialInstanceCount: 1", "InitialInstanceCount: 2"))
    capsys.readouterr()
    assert deploy_main(["manifests", "--check", "--outdir", str(written)]) == 1
    assert capsys.readouterr().out == (
        f"{listen} differs from deploy/product.py: run `python -m deploy manifests`\n"
    )
    assert deploy_main(["manifests", "--outdir", str(written)]) == 0
    assert deploy_main(["manifests", "--check", "--outdir", str(written)]) == 0


def test_the_emulator_reads_the_products_images_from_its_manifests():
    """The emulator knows no image of the product: each manifest brings them, as the definition says."""
    for path in (DEFAULT_MANIFEST, VOICE_MANIFEST, COMPOSE / "listen.yaml", COMPOSE / "empty.yaml"):
        images = load_manifest(path).images
        assert set(images) == {image.name for image in PRODUCT.images}, path
        for image in PRODUCT.images:
            spec = images[image.name]
            assert (spec.command, spec.dockerfile, dict(spec.build_args)) == (
                image.command,
                image.dockerfile,
                dict(image.build_args),
            )
            assert spec.listen_variables == image.listen_variables
    assert load_manifest(COMPOSE / "empty.yaml").resources == ()


def test_the_default_manifest_is_the_definitions_endpoint_runtime_and_dashboard():
    manifest = load_manifest(DEFAULT_MANIFEST)
    specs = {resource.kind: resource.spec for resource in manifest.resources}
    speech, agent = PRODUCT.speech, PRODUCT.agent
    assert manifest.endpoints == [speech.name] and manifest.agent_runtimes == [agent.name]
    assert specs["Model"]["PrimaryContainer"] == {
        "Image": speech.image.uri,
        "Environment": {"TTS_VOICE": PRODUCT.voice},
    }
    [variant] = specs["EndpointConfig"]["ProductionVariants"]
    assert (variant["InstanceType"], variant["RoutingConfig"]) == (
        speech.instance_type,
        {"RoutingStrategy": speech.routing},
    )
    assert specs["AgentRuntime"]["environmentVariables"] == {
        "AGENT_TTS_ENDPOINT": speech.name,
        "AGENT_TTS_VOICE": PRODUCT.voice,
    }
    assert specs["AgentRuntime"]["tags"] == {"aws:cloudformation:stack-name": agent.stack("Runtime")}
    cloudwatch = CloudWatchControl(Metrics(), "us-east-1", "123456789012")
    assert cloudwatch.operations()["PutDashboard"](specs["Dashboard"]) == {"DashboardValidationMessages": []}
    assert specs["Dashboard"]["DashboardName"] == f"{speech.name}-voice"
