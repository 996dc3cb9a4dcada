"""`bargein`: how fast an interrupted answer goes quiet. A listener plays the answer in real time and
interrupts PLAYED_S after its first audio (`{"interrupt": {"played_ms": N}}` on the same session, as
the web page does); from the moment the interrupt is sent this measures, on a fresh local stack (the
real Kokoro container, the emulated Bedrock's paced script model, the agent):

- `last_audio_ms`: the last audio chunk of the interrupted turn to reach the client (0: none after);
- `turn_end_ms`: its `agent_end` (`interrupted: true`);
- `answered_ms`: the interrupt's own answer (`interrupted`, the history rewritten);
- `container_idle_ms`: the endpoint has no session open (`GET /_emulator/status`, polled every
  POLL_S), so the container has stopped computing the answer;
- `model_idle_ms`: the model's reply stream has ended (the emulated Bedrock's request record). The
  script model writes slowly (TOKENS_PER_S) so that it is still writing when the interrupt comes.

Times are the client's (`time.perf_counter`), or wall-clock where the emulator records them
(`time.time()`, one machine, one clock).
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks import report
from benchmarks.stats import summarize
from emulator.config import EmulatorConfig
from local_stack.stack import LocalStack, local_stack
from tts.wire.sse import SSEParser

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
PROMPT = "Where is my order?"
PLAYED_S = 1.0
FIRST_TOKEN_MS, TOKENS_PER_S = 400, 8.0  # the script's reply takes about 7 s to write
POLL_S = 0.01
METRICS = ("last_audio_ms", "turn_end_ms", "answered_ms", "container_idle_ms", "model_idle_ms")
LABELS = {
    "last_audio_ms": "last audio byte\nreaches the client",
    "turn_end_ms": "interrupted turn's\nagent_end",
    "answered_ms": "interrupt answered\n(history rewritten)",
    "container_idle_ms": "container idle\n(no session open)",
    "model_idle_ms": "model idle\n(reply stream ended)",
}


def _post(stack: LocalStack, payload: dict[str, Any], session: str, seen: list[tuple[float, dict]]) -> None:
    parser = SSEParser()
    with httpx.stream(
        "POST",
        f"{stack.agent_url}/invocations",
        json=payload,
        headers={SESSION_HEADER: session},
        timeout=120,
        trust_env=False,
    ) as response:
        for raw in response.iter_raw():
            seen += [(time.perf_counter(), event) for event in parser.feed(raw)]


def _endpoint_sessions(emulator_url: str) -> int:
    status = httpx.get(f"{emulator_url}/_emulator/status", timeout=5, trust_env=False).json()
    return sum(r["sessions"] for ep in status["endpoints"] for r in ep["replicas"])


def _model_ended(emulator_url: str, started_after: float, within_s: float = 30.0) -> float | None:
    """When the reply stream of the first model request made after `started_after` ended (polled: the
    emulated Bedrock records the end once it has seen the stream close, which can come after the
    turn's last event; read at once, half the runs found it not yet recorded)."""
    deadline = time.perf_counter() + within_s
    while True:
        requests = httpx.get(f"{emulator_url}/_emulator/bedrock/requests", timeout=5, trust_env=False)
        ours = [r for r in requests.json() if r["started"] >= started_after]
        if (ours and ours[0]["ended"] is not None) or time.perf_counter() > deadline:
            return ours[0]["ended"] if ours else None
        time.sleep(POLL_S)


def interrupt_once(stack: LocalStack) -> dict[str, Any]:
    emulator_url = stack.env["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"]
    session = f"bargein-{uuid.uuid4()}"
    turn: list[tuple[float, dict]] = []
    wall_start = time.time()
    reader = threading.Thread(target=_post, args=(stack, {"prompt": PROMPT}, session, turn))
    reader.start()
    while not any(e["type"] == "audio_chunk" for _, e in list(turn)):
        if not reader.is_alive():
            raise RuntimeError(f"the turn ended without audio: {[e for _, e in turn][-2:]}")
        time.sleep(POLL_S)
    first_audio = next(at for at, e in list(turn) if e["type"] == "audio_chunk")
    time.sleep(max(0.0, first_audio + PLAYED_S - time.perf_counter()))
    interrupted_at, interrupted_wall = time.perf_counter(), time.time()
    played_ms = round((interrupted_at - first_audio) * 1000, 1)
    answer: list[tuple[float, dict]] = []
    asking = threading.Thread(
        target=_post, args=(stack, {"interrupt": {"played_ms": played_ms}}, session, answer)
    )
    asking.start()
    container_idle = None
    while container_idle is None and time.perf_counter() - interrupted_at < 30:
        if _endpoint_sessions(emulator_url) == 0:
            container_idle = time.perf_counter()
        else:
            time.sleep(POLL_S)
    asking.join(30)
    reader.join(30)
    model_ended = _model_ended(emulator_url, wall_start)

    def since(at: float | None) -> float | None:
        return None if at is None else round((at - interrupted_at) * 1000, 1)

    audio_after = [at for at, e in turn if e["type"] == "audio_chunk" and at >= interrupted_at]
    end = turn[-1][1]
    return {
        "played_ms": played_ms,
        "interrupted": end["type"] == "agent_end" and end.get("interrupted") is True,
        "heard": answer[0][1].get("heard") if answer else None,
        "last_audio_ms": since(max(audio_after)) if audio_after else 0.0,
        "turn_end_ms": since(turn[-1][0]),
        "answered_ms": since(answer[0][0]) if answer else None,
        "container_idle_ms": since(container_idle),
        "model_idle_ms": (
            round((model_ended - interrupted_wall) * 1000, 1)
            if model_ended is not None and model_ended >= interrupted_wall
            else None  # the model had already finished: nothing to stop
        ),
    }


def plot(result: dict[str, Any]) -> report.Figure:
    fig, (ax,) = report.figure("Barge-in: from the interrupt to quiet", width=8)
    medians = [result["summary"][m].get("median_ms", 0.0) for m in METRICS]
    y = np.arange(len(METRICS))
    bars = ax.barh(y, medians, 0.5, color=report.OURS, label="median")
    for metric, row in zip(METRICS, y, strict=True):
        values = [r[metric] for r in result["runs"] if r[metric] is not None]
        ax.scatter(values, [row] * len(values), color=report.SECOND, s=12, zorder=3)
    report.label_bars(ax, bars, "{:,.0f} ms", horizontal=True)
    ax.set_yticks(y, [LABELS[m] for m in METRICS], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms after the interrupt was sent (bars: median; dots: each run)")
    ax.set_title(
        f"interrupt {PLAYED_S:g} s into the answer; script model at {TOKENS_PER_S:g} tokens/s", fontsize=9
    )
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    runs = 3 if quick else 10
    config = dataclasses.replace(
        EmulatorConfig.from_env(),
        http_port=0,
        h2_port=0,
        llm_backend="script",
        llm_first_token_ms=FIRST_TOKEN_MS,
        llm_tokens_per_s=TOKENS_PER_S,
    )
    with local_stack(config) as stack:
        _post(stack, {"prompt": PROMPT}, f"warm-{uuid.uuid4()}", [])  # connections, lazy imports
        results = [interrupt_once(stack) for _ in report.progress(range(runs), "interrupts")]
    summary = {m: summarize([r[m] for r in results if r[m] is not None]) for m in METRICS}
    result = {
        "prompt": PROMPT,
        "played_s": PLAYED_S,
        "model": {"first_token_ms": FIRST_TOKEN_MS, "tokens_per_s": TOKENS_PER_S},
        "runs": results,
        "summary": summary,
    }
    rows = [
        (LABELS[m].replace("\n", " "), s.get("median_ms", "-"), s.get("p90_ms", "-"), s.get("count", 0))
        for m, s in summary.items()
    ]
    print(report.table(["after the interrupt", "median (ms)", "p90 (ms)", "runs"], rows))
    return report.write(out, "bargein", result, plot(result), quick)
