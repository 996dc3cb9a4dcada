"""`agent-infra demo`: the same prompt through both modes of a running agent, timed from the client.

The target is a local URL (`http://127.0.0.1:8080`) or a deployed AgentCore runtime ARN (called
through boto3 `bedrock-agentcore` `invoke_agent_runtime`). Times are taken where the events arrive:
time to first text (first `text_delta`), time to first audio (first `audio_chunk`), answer complete
(last `text_delta`), total (`agent_end`), each relative to the arrival of `agent_start`. The report
says, per mode, how long before (bidi) or after (batch) the answer was complete speech began, what a
listener who plays each chunk as it arrives would hear (stalls: tools.listener; PCM only, the format
whose chunks say their own length), and explains each term in one line before it uses it.
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import httpx

from agent.events import read_events
from facts import AUDIO_FORMATS, MODES
from tools.listener import Arrival, listen

# An answer of several sentences: bidi speaks the first while the model still writes the rest, which a
# one-sentence answer cannot show (both modes then send the same sentence at the same moment).
DEFAULT_PROMPT = "Give me three short tips for sleeping better tonight."
# First-audio ratios closer to 1 than this are reported as level: one run's first audio spreads by about
# 15% on a 2-core laptop (852-1,159 ms over 15 warm runs of the same one-sentence answer, both modes).
LEVEL = 1.15
DEFAULT_RUNS = 3  # each mode; the report gives medians, which that spread makes worth taking
TURN_TIMEOUT_S = 120


class DemoError(RuntimeError):
    """The agent answered with an error event or not at all."""


@dataclass(frozen=True)
class RunResult:
    mode: str
    ttft_ms: float
    ttfa_ms: float
    complete_ms: float
    """When the answer's last text arrived."""
    total_ms: float
    chunks: int
    text: str
    stall_s: float | None = None
    """What the listener waited for audio, in all (None: not PCM, so chunk lengths are unknown)."""
    heard: str = "stalls not measured (not PCM)"
    """tools.listener's summary: `no stall`, or how many, how long, and the first one's place."""

    @property
    def lead_ms(self) -> float:
        """How long before the answer was complete speech began (negative: after)."""
        return self.complete_ms - self.ttfa_ms


def local_chunks(url: str, payload: dict, session_id: str) -> Iterator[bytes]:
    """The raw SSE bytes of one turn of the agent at `url`, as they arrive."""
    headers = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": session_id}
    with httpx.stream(
        "POST",
        f"{url.rstrip('/')}/invocations",
        json=payload,
        headers=headers,
        timeout=httpx.Timeout(TURN_TIMEOUT_S, connect=10),
    ) as response:
        if response.status_code != 200:
            raise DemoError(f"agent answered HTTP {response.status_code}: {response.read()[:300]!r}")
        yield from response.iter_raw()


def runtime_chunks(arn: str, payload: dict, session_id: str) -> Iterator[bytes]:
    """The raw SSE bytes of one turn of the AgentCore runtime `arn`, as they arrive.

    boto3's `StreamingBody.read(n)` (and so `iter_chunks`/`iter_lines`) waits until n bytes are in,
    which would hold a small event such as `agent_start` back until later events fill the chunk and
    skew every time measured from it; the body's urllib3 response `read1` returns whatever has
    arrived. A body that breaks off is a DemoError.
    """
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError
    from urllib3.exceptions import HTTPError as Urllib3Error

    region = arn.split(":")[3]
    # As long between two events as the local client waits (boto3's default is 60 s).
    config = Config(read_timeout=TURN_TIMEOUT_S, retries={"max_attempts": 1})
    client = boto3.client("bedrock-agentcore", region_name=region, config=config)
    try:
        response = client.invoke_agent_runtime(
            agentRuntimeArn=arn,
            runtimeSessionId=session_id,
            payload=json.dumps(payload).encode(),
            contentType="application/json",
            accept="text/event-stream",
        )
    except (BotoCoreError, ClientError) as exc:
        raise DemoError(f"invoke_agent_runtime failed: {exc}") from exc
    raw = response["response"]._raw_stream
    try:
        while chunk := raw.read1(64 * 1024):
            yield chunk
    except Urllib3Error as exc:
        raise DemoError(f"the runtime's answer broke off: {exc}") from exc
    finally:
        response["response"].close()


def turn_chunks(target: str, payload: dict, session_id: str) -> Iterator[bytes]:
    """One turn's raw SSE bytes from a local URL or an AgentCore runtime ARN."""
    if target.startswith("arn:"):
        return runtime_chunks(target, payload, session_id)
    return local_chunks(target, payload, session_id)


def run_once(target: str, mode: str, prompt: str, voice: str | None, audio_format: str | None) -> RunResult:
    payload: dict = {"prompt": prompt, "mode": mode}
    if voice:
        payload["voice"] = voice
    if audio_format:
        payload["format"] = audio_format
    session_id = f"demo-{mode}-{uuid.uuid4()}"  # a fresh conversation per run; AgentCore wants >= 33 chars
    started = first_text = last_text = first_audio = ended = None
    audio_chunks, text, pcm_rate, arrivals = 0, "", None, []
    for now, event in read_events(turn_chunks(target, payload, session_id)):
        kind = event.get("type")
        if kind == "agent_start":
            started = now
            pcm_rate = event.get("sample_rate") if event.get("format") == "pcm" else None
        elif kind == "text_delta":
            first_text = first_text or now
            last_text = now
            text += event.get("text", "")
        elif kind == "audio_chunk":
            first_audio = first_audio or now
            audio_chunks += 1
            if pcm_rate:
                arrivals.append(Arrival(now, len(base64.b64decode(event.get("data", ""))) / (2 * pcm_rate)))
        elif kind == "error":
            raise DemoError(f"{mode}: {event.get('code')}: {event.get('message')}")
        elif kind == "agent_end":
            ended = now
    if started is None or first_text is None or last_text is None or first_audio is None or ended is None:
        raise DemoError(f"{mode}: the stream ended without text, audio or agent_end")

    def ms(t: float) -> float:
        return round((t - started) * 1000, 1)

    times = (ms(first_text), ms(first_audio), ms(last_text), ms(ended))
    if not arrivals:
        return RunResult(mode, *times, audio_chunks, text)
    heard = listen(arrivals)
    return RunResult(mode, *times, audio_chunks, text, round(heard.stall_s, 3), heard.summary())


def compare(
    target: str,
    prompt: str,
    runs: int = DEFAULT_RUNS,
    voice: str | None = None,
    audio_format: str | None = None,
) -> dict:
    """Both modes, `runs` times each, alternating which goes first; medians (the lead of speech over the
    answer's completion is the median of each run's own lead) and the TTFA ratio."""
    results: dict[str, list[RunResult]] = {mode: [] for mode in MODES}
    for n in range(runs):
        for mode in MODES if n % 2 == 0 else reversed(MODES):
            results[mode].append(run_once(target, mode, prompt, voice, audio_format))
    summary: dict = {}
    for mode, rows in results.items():
        summary[mode] = {
            key: statistics.median(getattr(r, key) for r in rows)
            for key in ("ttfa_ms", "ttft_ms", "complete_ms", "total_ms", "chunks", "lead_ms")
        }
        summary[mode]["runs"] = [asdict(r) | {"lead_ms": r.lead_ms, "text": None} for r in rows]
        worst = max(rows, key=lambda r: r.stall_s or 0.0)
        summary[mode] |= {"stall_s": worst.stall_s, "heard": worst.heard}
    summary["ratio"] = round(summary["batch"]["ttfa_ms"] / summary["bidi"]["ttfa_ms"], 2)
    summary["text"] = results["bidi"][0].text
    return summary


def runs_per_mode(text: str) -> int:
    """`--runs`, as argparse reads it: a whole number of runs of each mode, at least one (the report
    takes the median of each mode's runs, and there is none of nothing)."""
    try:
        runs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of runs, not {text!r}") from None
    if runs < 1:
        raise argparse.ArgumentTypeError(f"at least 1 run of each mode, not {runs}")
    return runs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint-url", required=True, help="the agent: http://127.0.0.1:8080, or an AgentCore runtime ARN"
    )
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument(
        "--runs", type=runs_per_mode, default=DEFAULT_RUNS, help=f"per mode (default {DEFAULT_RUNS})"
    )
    parser.add_argument("--voice")
    parser.add_argument("--format", dest="audio_format", choices=AUDIO_FORMATS)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")


GLOSSARY = (
    ("bidi", "speaks each sentence the moment the model has written it, while it writes the rest"),
    ("batch", "waits for the whole answer, then speaks it (the usual way: the baseline)"),
    ("first text", "when the model's first words arrived, from the start of the turn"),
    ("first audio", "when the first sound arrived: time to first audio (TTFA)"),
    ("complete", "when the answer's last words arrived"),
    ("chunks", "pieces of audio as they stream to the client (100 ms each for PCM)"),
    ("stall", "a wait for audio by a listener who plays each chunk as it arrives, from the first"),
)
# A lead shorter than this is reported as speech beginning as the answer completed: the report shows
# tenths of a second.
SAME_MOMENT_MS = 50


def speech_lead(mode: str, lead_ms: float) -> str:
    """`mode: speech began X s before the answer was complete` (or after, or as)."""
    if abs(lead_ms) < SAME_MOMENT_MS:
        return f"{mode}: speech began as the answer was complete"
    when = "before" if lead_ms > 0 else "after"
    return f"{mode}: speech began {abs(lead_ms) / 1000:.1f} s {when} the answer was complete"


def report(summary: dict) -> str:
    """The glossary, the table of medians, each mode's lead of speech over the answer, and the closing
    line on first audio."""
    runs = len(summary["bidi"]["runs"])
    width = max(len(term) for term, _ in GLOSSARY)
    lines = [
        f"Two ways to speak the same answer, the median of {runs} runs each:"
        if runs > 1
        else "Two ways to speak the same answer, one run each:"
    ]
    lines += [f"  {term:<{width}}  {meaning}" for term, meaning in GLOSSARY]
    lines += [
        f"{'mode':<6} {'first text':>11} {'first audio':>12} {'complete':>10} {'total':>9} {'chunks':>7}",
    ]
    for mode in MODES:
        row = summary[mode]
        lines.append(
            f"{mode:<6} {row['ttft_ms']:>9.0f}ms {row['ttfa_ms']:>10.0f}ms {row['complete_ms']:>8.0f}ms "
            f"{row['total_ms']:>7.0f}ms {row['chunks']:>7.0f}"
        )
    lines += [speech_lead(mode, summary[mode]["lead_ms"]) for mode in MODES]
    worst = " (the worst run)" if runs > 1 else ""
    lines += [f"{mode}: the listener heard {summary[mode]['heard']}{worst}" for mode in MODES]
    ratio = summary["ratio"]
    if ratio >= LEVEL:
        lines.append(f"bidi TTFA is {ratio:.1f}x faster than batch")
    elif ratio * LEVEL <= 1:  # a very short or very fast answer: one pass over all of it can win
        lines.append(f"bidi TTFA is {1 / ratio:.1f}x slower than batch")
    else:  # a one-sentence answer: both modes send the same sentence the moment it is complete
        lines.append(f"bidi and batch reach first audio together (batch/bidi {ratio:.2f})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agent-infra demo", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        summary = compare(args.endpoint_url, args.prompt, args.runs, args.voice, args.audio_format)
    except (DemoError, httpx.HTTPError) as exc:
        print(f"demo failed: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(
            json.dumps(
                {
                    mode: {k: summary[mode][k] for k in ("ttfa_ms", "ttft_ms", "complete_ms", "total_ms")}
                    for mode in MODES
                }
                | {"ratio": summary["ratio"]}
            )
        )
    else:
        print(f"answer: {summary['text']}")
        print(report(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
