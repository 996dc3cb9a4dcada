"""Which platform an image is built for (no engine needed): what binfmt_misc must hold for an amd64
engine to run arm64 containers, and the rehearsal's choice for an asset that names linux/arm64: that
platform where the engine runs it, else, or when the stack asks for the host's, a labelled stand-in
built for the engine's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.images import assets, platforms
from emulator.images.platforms import emulation_missing
from emulator.services.cloudformation.shapes import ImageAsset

ENTRY = "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: {flags}\noffset 0\n"


def binfmt(tmp_path: Path, entry: str | None) -> Path:
    (tmp_path / "register").write_text("")
    if entry is not None:
        (tmp_path / "qemu-aarch64").write_text(entry)
    return tmp_path


def test_arm64_runs_with_qemu_registered_enabled_and_fixed(tmp_path: Path):
    assert emulation_missing("linux/arm64", binfmt(tmp_path, ENTRY.format(flags="PF"))) is None


@pytest.mark.parametrize(
    ("entry", "missing"),
    [
        (None, "no qemu-aarch64 in binfmt_misc"),
        (ENTRY.replace("enabled", "disabled").format(flags="PF"), "registered in binfmt_misc but disabled"),
        (ENTRY.format(flags="P"), "without the F flag, so a container cannot find it"),
    ],
)
def test_what_is_missing_is_named_with_the_fix(tmp_path: Path, entry: str | None, missing: str):
    said = emulation_missing("linux/arm64", binfmt(tmp_path, entry))
    assert said is not None and missing in said and "scripts/docker-engine emulation" in said


def test_an_unmounted_binfmt_misc_and_an_unknown_platform_are_said(tmp_path: Path):
    assert "binfmt_misc is not mounted" in str(emulation_missing("linux/arm64", tmp_path))
    assert "not a platform the builder knows" in str(emulation_missing("linux/s390x", tmp_path))


class Engine:
    def __init__(self, architecture: str) -> None:
        self.architecture = architecture

    def info(self) -> dict[str, str]:
        return {"Architecture": self.architecture}


@pytest.mark.parametrize(
    ("engine", "missing", "host", "built_for", "stands_in_for"),
    [
        ("x86_64", None, False, "linux/arm64", None),  # emulated: as AgentCore runs it
        ("x86_64", None, True, None, "linux/arm64"),  # --host-platform
        ("x86_64", "no qemu-aarch64 in binfmt_misc", False, None, "linux/arm64"),
        ("aarch64", "never read", False, "linux/arm64", None),  # native
    ],
)
def test_the_rehearsal_builds_the_agent_for_arm64_where_the_engine_runs_it(
    monkeypatch: pytest.MonkeyPatch,
    engine: str,
    missing: str | None,
    host: bool,
    built_for: str | None,
    stands_in_for: str | None,
):
    monkeypatch.setattr(platforms, "emulation_missing", lambda platform: missing)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    asset = ImageAsset("agent/Dockerfile", "f" * 64, {}, "linux/arm64", host)
    chosen = assets._choose(Engine(engine), asset)  # type: ignore[arg-type]
    assert (chosen.platform, chosen.stands_in_for) == (built_for, stands_in_for)
    assert chosen.image == "voice-agent-aws-rehearsal/agent:" + "f" * 16


def test_an_asset_without_a_platform_is_built_for_the_engine():
    chosen = assets._choose(Engine("x86_64"), ImageAsset("tts/Dockerfile.gpu", "a" * 64, {}, None))  # type: ignore[arg-type]
    assert (chosen.platform, chosen.stands_in_for) == (None, None)
