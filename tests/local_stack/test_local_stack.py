"""local_stack's own parts, without starting the stack: the manifest settings it hands each replica,
the answer it writes as WAV, the web page's relay, and the command line's refusals."""

from __future__ import annotations

import base64
import http.server
import socket
import subprocess
import sys
import threading
import wave
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from emulator.manifest import DEFAULT_MANIFEST, load_manifest
from local_stack import ask
from local_stack.stack import with_environment
from local_stack.web import RelayError, relay
from tests.support.paths import REPO
from tts.wire.sse import encode_event


def test_replica_settings_go_into_the_manifest_for_that_replica_alone() -> None:
    manifest = load_manifest(DEFAULT_MANIFEST)
    changed = with_environment(manifest, {"AGENT_X": "1"}, {"TTS_WINDOW_FIRST_FRAMES": "0"})
    specs = {r.kind: r.spec for r in changed.resources}
    assert specs["Model"]["PrimaryContainer"]["Environment"] == {
        "TTS_VOICE": "jm_kumo",
        "TTS_WINDOW_FIRST_FRAMES": "0",
    }
    runtime_env = specs["AgentRuntime"]["environmentVariables"]
    assert runtime_env["AGENT_X"] == "1" and "TTS_WINDOW_FIRST_FRAMES" not in runtime_env
    assert specs["Endpoint"] == {r.kind: r.spec for r in manifest.resources}["Endpoint"]
    assert with_environment(manifest, {}, {}) == manifest
    assert (
        "AGENT_X"
        not in next(r for r in manifest.resources if r.kind == "AgentRuntime").spec["environmentVariables"]
    ), "the loaded manifest is left as it was"


def test_the_answer_is_written_as_a_wav_file_of_its_length(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pcm = bytes(range(256)) * 30
    events = [
        {"type": "agent_start"},
        {"type": "text_delta", "text": "Hello "},
        {"type": "audio_chunk", "seq": 0, "data": base64.b64encode(pcm[:4000]).decode()},
        {"type": "text_delta", "text": "there."},
        {"type": "audio_chunk", "seq": 1, "data": base64.b64encode(pcm[4000:]).decode()},
        {"type": "agent_end"},
    ]
    monkeypatch.setattr(ask, "turn_chunks", lambda *_: iter([b"".join(encode_event(e) for e in events)]))
    text, seconds = ask.speak_to_wav("http://agent", "hi", tmp_path / "out" / "answer.wav")
    assert text == "Hello there." and seconds == pytest.approx(len(pcm) / 2 / 24_000)
    with wave.open(str(tmp_path / "out" / "answer.wav")) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 24_000)
        assert wav.getnframes() == len(pcm) // 2 and wav.readframes(wav.getnframes()) == pcm


def test_an_error_event_fails_the_question(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    error = encode_event({"type": "error", "code": "tts_unavailable", "message": "no endpoint"})
    monkeypatch.setattr(ask, "turn_chunks", lambda *_: iter([error]))
    with pytest.raises(RuntimeError, match="tts_unavailable: no endpoint"):
        ask.speak_to_wav("http://agent", "hi", tmp_path / "answer.wav")
    assert not (tmp_path / "answer.wav").exists()


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html>the page</html>" * 1000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        sent = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", str(len(sent)))
        self.end_headers()
        self.wfile.write(sent[::-1])

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def page() -> Iterator[tuple[str, int]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.timeout(30)
def test_the_relay_serves_the_page_on_the_chosen_port(page: tuple[str, int]) -> None:
    port = _free_port()
    with relay(port, page) as url:
        assert url == f"http://127.0.0.1:{port}"
        with httpx.Client(trust_env=False) as client:  # one kept-alive connection, several requests
            assert client.get(f"{url}/").text == "<html>the page</html>" * 1000
            assert client.post(f"{url}/invocations", content=b"abc" * 50_000).content == b"cba" * 50_000
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/", trust_env=False)


def test_a_port_in_use_is_a_clear_error(page: tuple[str, int]) -> None:
    with pytest.raises(RelayError, match=f"cannot listen on 127.0.0.1:{page[1]}"), relay(page[1], page):
        pass


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--port", "8080"], "it needs --serve"), (["--serve", "--port", "70000"], "must be 1-65535")],
)
def test_the_command_line_refuses_a_port_it_cannot_use(argv: list[str], message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "local_stack", *argv], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and message in result.stderr
