"""Where the endpoint's weights come from: hexgrad's files from the Hugging Face Hub (pinned revision,
checked SHA-256), else the offline export, said in one line; the default voice follows the source.

The hub is a LOCAL STAND-IN: a small HTTP server on loopback that serves files in the hub's URL layout
(`/<repo>/resolve/<revision>/<path>` with `X-Repo-Commit` and an ETag carrying the SHA-256), found by the
real `huggingface_hub` client through `HF_ENDPOINT`. Its files are tiny placeholders, not the model."""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from deploy import model_dir
from deploy.config import DeployConfig
from deploy.errors import ConfigError
from deploy.model_dir import HUB_FILES, HUB_REPO, HUB_REVISION, resolve_model_source
from emulator.processes import free_port


class HubStandIn(ThreadingHTTPServer):
    """Serves `files` ({path: bytes}) at the pinned revision the way the hub's resolve endpoint does."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.requests: list[str] = []
        super().__init__(("127.0.0.1", 0), _HubHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _HubHandler(BaseHTTPRequestHandler):
    server: HubStandIn

    def log_message(self, *args: object) -> None:
        pass

    def _resolve(self) -> bytes | None:
        self.server.requests.append(self.path)
        prefix = f"/{HUB_REPO}/resolve/{HUB_REVISION}/"
        body = self.server.files.get(self.path[len(prefix) :]) if self.path.startswith(prefix) else None
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        self.send_response(200)
        self.send_header("X-Repo-Commit", HUB_REVISION)
        self.send_header("ETag", f'"{hashlib.sha256(body).hexdigest()}"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return body

    def do_HEAD(self) -> None:
        self._resolve()

    def do_GET(self) -> None:
        body = self._resolve()
        if body is not None:
            self.wfile.write(body)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[HubStandIn]:
    files = {name: f"placeholder for {name}".encode() for name in HUB_FILES}
    server = HubStandIn(files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    # huggingface_hub reads HF_HUB_OFFLINE once, at import: a test that imported it offline (the SmolLM2
    # tests load transformers with HF_HUB_OFFLINE=1) would leave the client refusing every request, so a
    # run of tests/emulator before tests/deploy saw "does not answer". This hub answers: the client is on.
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    # The stand-in's placeholder cannot match the real checkpoint's pinned SHA-256; pin the placeholder's.
    monkeypatch.setitem(
        model_dir.PINNED_SHA256, "kokoro-v1_0.pth", hashlib.sha256(files["kokoro-v1_0.pth"]).hexdigest()
    )
    yield server
    server.shutdown()


def offline_export(export_dir: Path) -> Path:
    """An offline export already in the deploy's cache (the export itself is tested in tests/tts)."""
    directory = export_dir / "kokoro-82m-torch"
    (directory / "voices").mkdir(parents=True)
    (directory / "config.json").write_text("{}")
    (directory / "kokoro-v1_0.pth").write_bytes(b"exported")
    (directory / "voices" / "jm_kumo.pt").write_bytes(b"voice")
    return directory


def test_a_reachable_hub_supplies_hexgrads_files_and_its_voices(hub, tmp_path, capsys):
    source = resolve_model_source(DeployConfig(export_dir=tmp_path))
    assert source.kind == "hub" and {"af_heart", "jm_kumo"} <= set(source.voices)
    for name in HUB_FILES:
        assert (source.directory / name).read_bytes() == hub.files[name]
    assert not (source.directory / ".cache").exists()
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("model source: hub: hexgrad's original files from " + hub.url)
    served = len(hub.requests)
    assert resolve_model_source(DeployConfig(export_dir=tmp_path, model_source="hub")).kind == "hub"
    assert len(hub.requests) == served + 1, "a complete download is reused (one reachability check)"


def test_a_file_that_does_not_match_its_checksum_is_refused(hub, tmp_path, monkeypatch):
    monkeypatch.setitem(model_dir.PINNED_SHA256, "kokoro-v1_0.pth", "0" * 64)
    with pytest.raises(ConfigError, match=r"kokoro-v1_0\.pth from the hub has SHA-256"):
        resolve_model_source(DeployConfig(export_dir=tmp_path, model_source="hub"))
    assert not (tmp_path / f"kokoro-82m-hub-{HUB_REVISION[:12]}").exists()


def test_an_unreachable_hub_falls_back_to_the_offline_export_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    exported = offline_export(tmp_path)
    source = resolve_model_source(DeployConfig(export_dir=tmp_path))
    assert (source.kind, source.directory, source.voices) == ("offline", exported, ("jm_kumo",))
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("model source: offline: the offline export")
    with pytest.raises(ConfigError, match="does not answer"):
        resolve_model_source(DeployConfig(export_dir=tmp_path, model_source="hub"))


def test_a_failed_offline_export_is_a_config_error_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(model_dir, "EXPORT_COMMAND", (sys.executable, "-c", "import sys; sys.exit(3)"))
    with pytest.raises(
        ConfigError, match=r"failed \(exit 3.*install \.\[tts,torch\] or pass --model-source DIR"
    ):
        resolve_model_source(DeployConfig(export_dir=tmp_path, model_source="offline"))
    monkeypatch.setattr(model_dir, "EXPORT_COMMAND", (str(tmp_path / "no-such-python"),))
    with pytest.raises(ConfigError, match="cannot run"):
        resolve_model_source(DeployConfig(export_dir=tmp_path, model_source="offline"))


def test_a_given_directory_is_used_as_is_with_its_own_voices(tmp_path, capsys):
    directory = offline_export(tmp_path / "mine")
    (directory / "voices" / "af_heart.pt").write_bytes(b"voice")
    source = resolve_model_source(DeployConfig(model_dir=directory))
    assert (source.kind, source.directory, source.voices) == ("dir", directory, ("af_heart", "jm_kumo"))
    assert capsys.readouterr().out.startswith("model source: dir: your model directory")
    assert source.describe().endswith(", 2 voices")


def test_model_source_flag_takes_a_source_or_a_directory(tmp_path):
    import argparse

    from deploy.flags import add_building, config_from

    parser = argparse.ArgumentParser()
    add_building(parser)
    assert config_from(parser.parse_args(["--model-source", "offline"])).model_source == "offline"
    config = config_from(parser.parse_args(["--model-source", str(tmp_path)]))
    assert (config.model_dir, config.model_source) == (tmp_path, "auto")
    assert config_from(parser.parse_args([])).model_source == "auto"
