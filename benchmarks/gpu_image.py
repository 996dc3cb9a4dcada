"""`gpu_image`: the GPU image (tts/Dockerfile.gpu) as SageMaker runs it, on this machine's NVIDIA GPU
(what `scripts/gpu-check` runs after it built the image): the container started with every GPU
(`--gpus all`: the NVIDIA runtime mounts the host's driver, as on the endpoint's AMI) and its own
settings (the torch engine on CUDA), measured from outside over its WebSocket, as the platform reaches it:

- server first audio for a 10-word sentence, and the real-time factor of the whole answer (seconds to
  `synthesis_complete` over seconds of audio);
- the VRAM it holds (nvidia-smi's memory in use, less what was in use before it started), after warm-up
  and at the peak of the session sweep;
- how many concurrent sessions stay at real time: 1, 2, 4, ... sessions each speaking the whole answer to
  a listener who plays every frame as it arrives; a count stays at real time when no listener hears a
  stall over 50 ms. The sweep stops at the first count that does not.

Skipped with its reason without an NVIDIA GPU, a Docker engine with the NVIDIA runtime, or the image
(`python -m emulator build --dockerfile tts/Dockerfile.gpu --tag voice-agent-aws/kokoro-tts-gpu:gpu-check`).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from benchmarks import report
from benchmarks.container import TimedAudio, timed_audio, websocket_url
from benchmarks.stats import spread
from benchmarks.texts import ANSWER, TEN_WORDS
from emulator.processes import free_port
from facts import PCM_BYTES_PER_S

IMAGE = "voice-agent-aws/kokoro-tts-gpu:gpu-check"
TRIALS = 3
SESSIONS = [1, 2, 4, 8, 16, 32, 64]
STALL_LIMIT_S = 0.05
READY_TIMEOUT_S = 600  # SageMaker's container startup health check allows the same


def unavailable() -> str | None:
    """Why this machine cannot run the study, or None when it can."""
    if shutil.which("nvidia-smi") is None:
        return "no nvidia-smi: no NVIDIA GPU here"
    import docker

    try:
        client = docker.from_env()
        runtimes = client.info().get("Runtimes", {})
    except docker.errors.DockerException as exc:
        return f"no Docker engine answers ({exc})"
    if "nvidia" not in runtimes:
        return "the Docker engine has no NVIDIA runtime (install nvidia-container-toolkit)"
    if not client.images.list(name=IMAGE):
        return f"no image {IMAGE} (python -m emulator build --dockerfile tts/Dockerfile.gpu --tag {IMAGE})"
    return None


def vram_in_use_mib() -> int:
    """Memory in use on every GPU, by nvidia-smi (MiB)."""
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    return sum(int(line) for line in out.split())


class PeakVram:
    """nvidia-smi sampled every half second in a thread while the block runs; `.peak_mib` after."""

    def __init__(self) -> None:
        self.peak_mib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            self.peak_mib = max(self.peak_mib, vram_in_use_mib())

    def __enter__(self) -> PeakVram:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextlib.contextmanager
def gpu_container() -> Iterator[tuple[str, float]]:
    """The image on every GPU, on a free loopback port, ready (`/ping` 200): its base URL and the seconds
    from start to ready. Removed when the block ends."""
    import docker

    client = docker.from_env()
    port = free_port()
    started = time.perf_counter()
    container = client.containers.run(
        IMAGE,
        detach=True,
        device_requests=[docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])],
        ports={"8080/tcp": ("127.0.0.1", port)},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            container.reload()
            if container.status == "exited":
                raise RuntimeError(f"{IMAGE} exited: {container.logs(tail=20).decode(errors='replace')}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/ping", timeout=2).status_code == 200:
                    break
            if time.perf_counter() - started > READY_TIMEOUT_S:
                raise RuntimeError(f"{IMAGE} not ready after {READY_TIMEOUT_S} s")
            time.sleep(0.5)
        yield base, time.perf_counter() - started
    finally:
        container.remove(force=True)


async def _at_once(url: str, sessions: int) -> list[TimedAudio]:
    return list(await asyncio.gather(*(timed_audio(url, ANSWER) for _ in range(sessions))))


def real_time_sessions(rows: list[dict[str, Any]]) -> int:
    """The largest count of the sweep whose listeners all heard no stall over the limit (0: not even one)."""
    held = [row["sessions"] for row in rows if row["max_stall_s"] <= STALL_LIMIT_S]
    return max(held, default=0)


def sweep(url: str, counts: list[int]) -> list[dict[str, Any]]:
    rows = []
    for count in report.progress(counts, "sessions at once"):
        heard = asyncio.run(_at_once(url, count))
        rows.append(
            {
                "sessions": count,
                "first_audio_s": spread([t.first_s for t in heard]),
                "max_stall_s": round(max(t.stalls_s for t in heard), 3),
            }
        )
        if rows[-1]["max_stall_s"] > STALL_LIMIT_S:
            break
    return rows


def plot(result: dict[str, Any]) -> report.Figure:
    rows = result["sessions"]
    fig, (stall_ax, first_ax) = report.figure(
        f"{IMAGE} on {result['gpu']}: RTF {result['rtf']['median']}, VRAM {result['vram_mib']['peak']} MiB, "
        f"{result['real_time_sessions']} sessions at real time",
        columns=2,
        width=5,
    )
    stalls = [r["max_stall_s"] * 1000 for r in rows]
    report.session_bars(stall_ax, rows, stalls, "longest stall a listener heard", "ms")
    report.reference_line(stall_ax, STALL_LIMIT_S * 1000, "50 ms", color=report.TARGET)
    first = [r["first_audio_s"]["median"] * 1000 for r in rows]
    report.session_bars(first_ax, rows, first, "first audio, whole answer (median)", "ms")
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    if reason := unavailable():
        return report.skipped("gpu_image", reason)
    trials = 1 if quick else TRIALS
    gpu = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    before = vram_in_use_mib()
    with gpu_container() as (base, ready_s):
        url = websocket_url(base)
        asyncio.run(timed_audio(url, TEN_WORDS))  # the first request's CUDA kernels and allocations
        warm_mib = vram_in_use_mib() - before
        first = [asyncio.run(timed_audio(url, TEN_WORDS)).first_s for _ in range(trials)]
        whole = [asyncio.run(timed_audio(url, ANSWER)) for _ in range(trials)]
        with PeakVram() as peak:
            rows = sweep(url, SESSIONS[:4] if quick else SESSIONS)
    result = {
        "image": IMAGE,
        "gpu": gpu,
        "ready_s": round(ready_s, 2),
        "server_first_audio_10_words_s": spread(first),
        "rtf": spread([t.complete_s / (len(t.pcm) / PCM_BYTES_PER_S) for t in whole]),
        "vram_mib": {"after_warm_up": warm_mib, "peak": max(peak.peak_mib - before, warm_mib)},
        "sessions": rows,
        "real_time_sessions": real_time_sessions(rows),
        "stall_limit_s": STALL_LIMIT_S,
    }
    print(
        report.table(
            ["ready (s)", "first audio, 10 words (s)", "RTF", "VRAM (MiB)", "sessions at real time"],
            [
                (
                    f"{result['ready_s']:.1f}",
                    f"{result['server_first_audio_10_words_s']['median']:.3f}",
                    f"{result['rtf']['median']:.3f}",
                    result["vram_mib"]["peak"],
                    result["real_time_sessions"],
                )
            ],
        )
    )
    return report.write(out, "gpu_image", result, plot(result), quick)
