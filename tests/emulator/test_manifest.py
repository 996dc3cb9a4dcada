"""Manifests: the shipped ones load, malformed or unreadable ones are ManifestError, a manifest's images
carry what the runtimes need, and its dashboard is put into the emulator's CloudWatch."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.manifest import DEFAULT_MANIFEST, VOICE_MANIFEST, Manifest, ManifestError, load_manifest
from emulator.server import emulator_in_thread
from tests.emulator.support import boto_client, fast_config


def test_shipped_manifests_load() -> None:
    for path in DEFAULT_MANIFEST.parent.glob("*.yaml"):
        if "resources" in path.read_text():
            manifest = load_manifest(path)
            # empty.yaml is an emulator with nothing in it, for `deploy aws --target local` to fill
            assert manifest.endpoints or path.name == "empty.yaml", path


def test_default_manifest_is_the_kokoro_endpoint() -> None:
    manifest = load_manifest(DEFAULT_MANIFEST)
    assert manifest.endpoints == ["kokoro-82m"]
    model = next(r for r in manifest.resources if r.kind == "Model")
    assert model.spec["PrimaryContainer"]["Environment"] == {"TTS_VOICE": "jm_kumo"}
    config = next(r for r in manifest.resources if r.kind == "EndpointConfig")
    assert config.spec["ProductionVariants"][0]["InstanceType"] == "ml.g5.xlarge"


@pytest.mark.parametrize(
    "obj",
    [
        "text",
        {"resources": [{"kind": "Pod", "spec": {}}]},
        {"extra": 1},
        {"images": {"x": {"cmd": "no"}}},
        {"images": {"x": {"command": ["a"], "listen_variables": ["HOST_ONLY"]}}},
    ],
)
def test_malformed_manifests_are_manifest_errors(obj: object) -> None:
    with pytest.raises(ManifestError):
        Manifest.from_obj(obj)


def test_an_image_says_where_its_container_listens_and_a_dashboard_is_put(tmp_path: Path) -> None:
    images = {"toy": {"command": ["{python}", "-m", "toy"], "listen_variables": ["TOY_HOST", "TOY_PORT"]}}
    body = '{"widgets": [{"type": "text", "properties": {"markdown": "hi"}}]}'
    dashboard = {"kind": "Dashboard", "spec": {"DashboardName": "toy-voice", "DashboardBody": body}}
    loaded = Manifest.from_obj({"images": images, "resources": [dashboard]})
    assert loaded.images["toy"].listen_variables == ("TOY_HOST", "TOY_PORT")
    assert [(r.service, r.operation, r.name) for r in loaded.resources] == [
        ("cloudwatch", "PutDashboard", "toy-voice")
    ]
    with emulator_in_thread(fast_config(tmp_path), loaded) as emu:
        got = boto_client(emu, "cloudwatch").get_dashboard(DashboardName="toy-voice")
    assert got["DashboardBody"] == body


def test_unreadable_manifest_is_a_manifest_error(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("resources: [unclosed")
    with pytest.raises(ManifestError, match="not valid YAML"):
        load_manifest(tmp_path / "bad.yaml")
    with pytest.raises(ManifestError, match="cannot read"):
        load_manifest(tmp_path / "missing.yaml")


def test_the_voice_manifest_is_the_default_stack_and_the_speech_to_text_endpoint():
    voice, default = load_manifest(VOICE_MANIFEST), load_manifest(DEFAULT_MANIFEST)
    listen = load_manifest(DEFAULT_MANIFEST.with_name("listen.yaml"))
    assert voice.resources == default.resources + listen.resources
    assert voice.endpoints == ["kokoro-82m", "whisper-stt"]


def test_an_include_is_applied_first_and_a_cycle_is_refused(tmp_path):
    (tmp_path / "base.yaml").write_text(
        "images: {m: {command: [a]}}\nresources:\n  - {kind: Model, spec: {ModelName: base}}\n"
    )
    (tmp_path / "top.yaml").write_text(
        "include: [base.yaml]\nimages: {m: {command: [b]}}\n"
        "resources:\n  - {kind: Model, spec: {ModelName: top}}\n"
    )
    top = load_manifest(tmp_path / "top.yaml")
    assert [r.spec["ModelName"] for r in top.resources] == ["base", "top"]
    assert top.images["m"].command == ("b",), "the including manifest's images win"
    (tmp_path / "loop.yaml").write_text("include: [loop.yaml]\n")
    with pytest.raises(ManifestError, match="includes itself"):
        load_manifest(tmp_path / "loop.yaml")
    (tmp_path / "bad.yaml").write_text("include: base.yaml\n")
    with pytest.raises(ManifestError, match="must be a list"):
        load_manifest(tmp_path / "bad.yaml")


def test_a_dashboard_is_the_put_dashboard_request_and_the_status_shows_it(tmp_path: Path) -> None:
    """`kind: Dashboard` goes through CloudWatch's PutDashboard, as a stack's AWS::CloudWatch::Dashboard
    does: boto3 reads it back, and the operator's status shows its metrics (no data yet: no value)."""
    import json

    import httpx

    from emulator.server import emulator_in_thread
    from tests.emulator.support import boto_client, fast_config

    body = {"widgets": [{"type": "metric", "properties": {"metrics": [["Shop", "Orders", {"stat": "Sum"}]]}}]}
    spec = {"DashboardName": "shop", "DashboardBody": json.dumps(body)}
    dashboard = Manifest.from_obj({"resources": [{"kind": "Dashboard", "spec": spec}]})
    assert [(r.service, r.operation, r.name) for r in dashboard.resources] == [
        ("cloudwatch", "PutDashboard", "shop")
    ]
    with emulator_in_thread(fast_config(tmp_path), dashboard) as emu:
        got = boto_client(emu, "cloudwatch").get_dashboard(DashboardName="shop")
        status = httpx.get(f"{emu.http_url}/_emulator/status", trust_env=False).json()
    assert json.loads(got["DashboardBody"]) == body
    [row] = status["dashboards"][0]["widgets"][0]["metrics"]
    assert (row["label"], row["stat"], row["period_s"], row["value"]) == ("Shop Orders", "Sum", 300, None)
