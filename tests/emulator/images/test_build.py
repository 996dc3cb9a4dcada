"""What an image build takes from the machine (emulator/images/): the CA bundle and pip's index
settings for the build stage, proxies as build arguments; which Dockerfile and build arguments build
which image."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from emulator.config import ConfigError, ImageSpec, default_images
from emulator.images import ImageBuildError
from emulator.images.build import BuildRequest, build_requests
from emulator.images.build_config import build_config_files, pip_settings, proxy_build_args
from tests.support import docker as docker_support
from tests.support.dockerfiles import known_images


def test_the_configured_ca_bundle_and_remote_indexes_reach_the_build(tmp_path: Path) -> None:
    bundle = tmp_path / "company-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    pip = {
        "index-url": "https://proxy.example/pypi/simple",
        "extra-index-url": "file:///opt/pypi/simple https://mirror.example/simple",
        "trusted-host": "proxy.example",
        "cert": "/no/such/file.pem",
    }
    files = build_config_files({"REQUESTS_CA_BUNDLE": str(bundle)}, pip)
    assert files["build-config/ca.pem"] == bundle.read_text()
    conf = files["build-config/pip.conf"].splitlines()
    assert "cert = /tmp/build-config/ca.pem" in conf
    assert "index-url = https://proxy.example/pypi/simple" in conf
    assert "extra-index-url = https://mirror.example/simple" in conf, "a file:// index is not in the build"
    assert "trusted-host = proxy.example" in conf


def test_pips_settings_are_read_as_pip_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From a real `pip config list`: an index list written over several lines comes back as its URLs,
    and a PIP_* variable wins over the file (what scripts/bootstrap hands to uv, and the builds to pip)."""
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\nextra-index-url =\n    https://a.example/simple\n    https://b.example/simple\n"
        "find-links = /from/the/file\n"
    )
    for name in [name for name in os.environ if name.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_FIND_LINKS", "/from/the/variable")
    settings = pip_settings(sys.executable)
    assert settings["extra-index-url"].split() == ["https://a.example/simple", "https://b.example/simple"]
    assert settings["find-links"] == "/from/the/variable"


def test_without_configuration_pip_keeps_its_defaults() -> None:
    files = build_config_files({}, {})
    assert files == {"build-config/pip.conf": "[global]\n"}


def test_pips_own_cert_setting_counts_when_no_variable_names_one(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("pem")
    assert build_config_files({}, {"cert": str(bundle)})["build-config/ca.pem"] == "pem"


def test_proxies_are_build_arguments() -> None:
    args = proxy_build_args(
        {"HTTPS_PROXY": "http://127.0.0.1:3128", "no_proxy": "localhost", "HOME": "/root"}
    )
    assert args == {"HTTPS_PROXY": "http://127.0.0.1:3128", "no_proxy": "localhost"}


def test_the_repository_images_map_to_their_dockerfiles_and_build_arguments() -> None:
    requests = build_requests(
        ["voice-agent-aws/kokoro-tts:latest", "voice-agent-aws/whisper-stt:1", "voice-agent-aws/echo:dev"],
        known_images(),
    )
    assert [(r.image, r.dockerfile, r.build_args.get("PACKAGE")) for r in requests] == [
        ("voice-agent-aws/kokoro-tts:latest", "container_kit/Dockerfile", "tts"),
        ("voice-agent-aws/whisper-stt:1", "container_kit/Dockerfile", "stt"),
        ("voice-agent-aws/echo:dev", "emulator/echo.Dockerfile", None),
    ]
    with pytest.raises(ImageBuildError, match="no Dockerfile is known for it"):
        build_requests(["someone/else:1"], known_images())
    with pytest.raises(
        ImageBuildError, match="no Dockerfile is known for it"
    ):  # the emulator knows echo only
        build_requests(["voice-agent-aws/kokoro-tts:latest"], default_images())


def test_a_manifest_image_names_its_build_arguments_and_never_the_base() -> None:
    spec = ImageSpec.from_obj(
        {
            "command": ["{python}", "-m", "tts"],
            "dockerfile": "container_kit/Dockerfile",
            "build_args": {"A": 1},
        }
    )
    assert spec.build_args == {"A": "1"}
    with pytest.raises(ConfigError, match="build_args map names to values"):
        ImageSpec.from_obj({"command": ["x"], "build_args": ["A=1"]})
    with pytest.raises(ImageBuildError, match="BASE_IMAGE is the builder's to choose"):
        BuildRequest("x:1", "container_kit/Dockerfile", {"BASE_IMAGE": "alpine"})


def test_in_ci_a_missing_engine_fails_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docker_support, "docker_unavailable", lambda: "no Docker engine: test")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI runs the docker tests"):
        docker_support.require_docker()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no Docker engine: test"):
        docker_support.require_docker()


def test_the_source_hash_follows_the_build_context(tmp_path, monkeypatch):
    """A changed file the build would send changes the hash (the image is rebuilt); nothing else does."""
    from emulator.images import build as images

    (tmp_path / ".dockerignore").write_text("tests\n")
    (tmp_path / "tts").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "Dockerfile").write_text("FROM scratch\nCOPY tts /tts\n")
    (tmp_path / "tts" / "a.py").write_text("one")
    (tmp_path / "tests" / "t.py").write_text("one")
    monkeypatch.setattr(images, "REPO", tmp_path)
    before = images.source_hash("Dockerfile")
    (tmp_path / "tests" / "t.py").write_text("two")
    assert images.source_hash("Dockerfile") == before, "an ignored file does not count"
    (tmp_path / "tts" / "a.py").write_text("two")
    after = images.source_hash("Dockerfile")
    assert after != before
    assert images.source_hash("Dockerfile", {"PACKAGE": "stt"}) != after, "one Dockerfile, several images"
