"""The emulator as its own process (`python -m emulator up`), as users run it, so the benchmark's
client and the emulator do not share an interpreter; and the official HTTP/2 client pointed at it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import yaml
from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from smithy_aws_core.identity import AWSCredentialsIdentity

from agent.config import AgentConfig
from agent.sagemaker_client import bidirectional_client
from emulator.cli.daemon import wait_ready
from emulator.config import EmulatorConfig
from emulator.manifest import DEFAULT_MANIFEST
from emulator.processes import stop_group
from facts import DEFAULT_VOICE, TTS_ENDPOINT
from tools import tts_client
from tools.tts_client import open_endpoint

CREDENTIALS = AWSCredentialsIdentity(access_key_id="bench", secret_access_key="bench")


class EmulatorProcess:
    """`python -m emulator up` on free ports in a scratch home with `manifest` (a dict, or the default
    manifest: the real Kokoro container as `kokoro-82m`) and extra `EMULATOR_*` variables."""

    def __init__(self, manifest: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="benchmarks-emulator-"))
        self.manifest = manifest
        self.env = env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self.state: dict[str, Any] = {}

    def __enter__(self) -> EmulatorProcess:
        manifest = DEFAULT_MANIFEST
        if self.manifest is not None:
            manifest = self.home / "manifest.yaml"
            manifest.write_text(yaml.safe_dump(self.manifest))
        env = {
            **os.environ,
            "EMULATOR_HOME": str(self.home),
            "EMULATOR_HTTP_PORT": "0",
            "EMULATOR_H2_PORT": "0",
            "EMULATOR_STOP_GRACE_S": "2",
            "EMULATOR_LLM_BACKEND": "script",  # no model loading beside the measurement
            **self.env,
        }
        log_path = self.home / "emulator.log"
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "emulator", "up", "-f", str(manifest)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        try:
            self.state = wait_ready(EmulatorConfig(home=self.home), self.process, log_path, timeout_s=300)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            stop_group(self.process, grace_s=30)
        shutil.rmtree(self.home, ignore_errors=True)

    def replica_port(self) -> int:
        status = httpx.get(f"{self.state['http_url']}/_emulator/status", trust_env=False).json()
        return int(status["endpoints"][0]["replicas"][0]["port"])

    async def client(self) -> AsyncSageMakerRuntimeHTTP2Client:
        """The official HTTP/2 client, built the way the agent builds it."""
        config = AgentConfig(
            region=self.state["region"],
            sagemaker_http2_endpoint=self.state["h2_url"],
            ca_bundle=self.state["ca"],
        )
        return await bidirectional_client(config, CREDENTIALS)


async def speak(
    client: AsyncSageMakerRuntimeHTTP2Client, text: str, since: float | None = None, timeout_s: float = 600
) -> tuple[float, float]:
    """`text` as one message on a fresh session to the TTS endpoint (with word timings, as the agent
    asks): milliseconds from `since` (`time.perf_counter()`; default: the moment the message is sent)
    to the first audio frame, and the seconds of audio that came back."""
    async with open_endpoint(client, TTS_ENDPOINT) as channel:
        since = time.perf_counter() if since is None else since
        message = {
            "text": text,
            "request_id": uuid.uuid4().hex[:12],
            "voice": DEFAULT_VOICE,
            "format": "pcm",
            "timestamps": True,
        }
        transcript = await tts_client.speak(channel, [message], timeout_s)
    arrivals = transcript.arrivals(since)
    if not arrivals:
        raise RuntimeError("the session ended without audio")
    return arrivals[0].at_s * 1000, sum(arrival.audio_s for arrival in arrivals)
