"""`python -m local_stack.ask TARGET [--prompt P] [--out WAV] [--runs N]`: one question to the agent at
TARGET (a URL, or an AgentCore runtime ARN reached with boto3 `invoke_agent_runtime`, as `agent-infra
demo` does against AWS), the spoken answer written to WAV, then both modes compared (medians of N runs
each, three by default):
when the first audio came, when the answer was complete, and how long before it speech began.

`python -m local_stack` runs it in a child process whose environment is `LocalStack.env`, so boto3
reaches the emulator without the stack's process changing its own environment.
"""

from __future__ import annotations

import argparse
import base64
import sys
import uuid
from pathlib import Path

from agent.events import read_events
from facts import PCM_BYTES_PER_S, SAMPLE_RATE
from tools.demo import DEFAULT_PROMPT, DEFAULT_RUNS, compare, report, runs_per_mode, turn_chunks
from tts.wire.encoders import wav_file


def speak_to_wav(target: str, prompt: str, out: Path, mode: str = "bidi") -> tuple[str, float]:
    """One turn of the agent at `target` (URL or runtime ARN); the PCM audio is written to `out` as
    WAV. Returns the answer and its audio seconds."""
    text, pcm = "", bytearray()
    payload = {"prompt": prompt, "mode": mode, "format": "pcm"}
    for _, event in read_events(turn_chunks(target, payload, f"local-{uuid.uuid4()}")):
        if event["type"] == "text_delta":
            text += event["text"]
        elif event["type"] == "audio_chunk":
            pcm += base64.b64decode(event["data"])
        elif event["type"] == "error":
            raise RuntimeError(f"{event['code']}: {event['message']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(wav_file(bytes(pcm), SAMPLE_RATE))
    return text, len(pcm) / PCM_BYTES_PER_S


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local_stack.ask", description=__doc__)
    parser.add_argument("target", help="the agent: http://127.0.0.1:8080, or an AgentCore runtime ARN")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--out", type=Path, default=Path("out/answer.wav"))
    parser.add_argument("--runs", type=runs_per_mode, default=DEFAULT_RUNS, help="of each mode, compared")
    args = parser.parse_args(argv)
    try:
        text, seconds = speak_to_wav(args.target, args.prompt, args.out)
        print(f"\nQ: {args.prompt}\nA: {text}\nwrote {args.out} ({seconds:.1f} s of speech)\n", flush=True)
        print(report(compare(args.target, args.prompt, args.runs)), flush=True)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the parent says what stopped
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
