"""`voice_turn`: the number a user of a voice agent feels, end of their speech to the answer's first
audio, through the whole local stack (compose/voice.yaml: Whisper base and Silero VAD, Kokoro, the
emulated Bedrock's local model, SmolLM2 on the CPU, and the agent), over the agent's `/ws` as the web
page's microphone drives it.

Each one-sentence question is spoken by Kokoro (rendered once through the stack's own endpoint and
resampled to 16 kHz: a question a person asks, which the held-out LibriVox readings are not; the `listen`
study measures recognition on those) and streamed at real time in 100 ms frames, with silence after it.
From the client's clock, with the speech's end where the transcript says it is (its `end_ms` less the
VAD's kept pad):

- `vad_end_ms`: the silence the VAD waits for before it calls the turn over (`STT_END_OF_TURN_MS`);
- `transcript_ms`: speech end to the final transcript (the wait, and the rest of the final decode, which
  starts when the speech pauses);
- `first_token_ms`: transcript to the answer's first text;
- `first_audio_ms`: first text to first audio;
- `total_ms`: speech end to first audio.

Baseline, in the same run: the transcript typed (`POST /invocations`), its first audio from the request:
the ratio says what listening adds to a typed question.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import av
import boto3
import httpx
import numpy as np
import websockets

from agent.events import read_events
from benchmarks import report
from benchmarks.stats import summarize
from emulator.config import EmulatorConfig
from emulator.manifest import VOICE_MANIFEST
from facts import SAMPLE_RATE, STT_PCM_BYTES_PER_S, STT_SAMPLE_RATE, TTS_ENDPOINT
from local_stack.stack import LocalStack, local_stack

QUESTIONS = (
    "What is the capital of France?",
    "How many legs does a spider have?",
    "Can you tell me a fun fact about the moon?",
    "What should I cook for dinner tonight?",
    "Why is the sky blue?",
)
FRAME_BYTES = STT_PCM_BYTES_PER_S // 10  # 100 ms
END_OF_TURN_MS, SPEECH_PAD_MS = 600, 200  # stt/config.py's defaults, which compose/listen.yaml keeps
LEAD_S, TAIL_S = 0.5, 2.0


def _silence(seconds: float) -> bytes:
    return b"\x00\x00" * round(seconds * STT_PCM_BYTES_PER_S / 2)


def _spoken(stack: LocalStack, text: str) -> bytes:
    """`text` in Kokoro's voice, through the stack's SageMaker endpoint, as 16 kHz s16le."""
    env = stack.env
    client = boto3.client(
        "sagemaker-runtime",
        endpoint_url=env["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"],
        region_name=env["AWS_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )
    body = json.dumps({"text": text, "format": "pcm"})
    pcm = client.invoke_endpoint(EndpointName=TTS_ENDPOINT, Body=body, ContentType="application/json")["Body"]
    samples = np.frombuffer(pcm.read(), dtype="<i2").reshape(1, -1)
    frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
    frame.sample_rate = SAMPLE_RATE
    resampler = av.AudioResampler(format="s16", layout="mono", rate=STT_SAMPLE_RATE)
    return b"".join(
        bytes(out.planes[0])[: out.samples * 2]
        for out in [*resampler.resample(frame), *resampler.resample(None)]
    )


async def _voice_turn(ws_url: str, pcm: bytes) -> dict[str, Any]:
    """One spoken question: every event with its arrival, and when the stream's audio began."""
    got: list[tuple[float, dict]] = []
    audio = _silence(LEAD_S) + pcm + _silence(TAIL_S)
    async with websockets.connect(ws_url, max_size=None) as ws:

        async def receive() -> None:
            async for message in ws:
                got.append((time.perf_counter(), json.loads(message)))

        reader = asyncio.create_task(receive())
        began = time.perf_counter()
        for index, start in enumerate(range(0, len(audio), FRAME_BYTES)):
            await asyncio.sleep(max(0.0, began + index * 0.1 - time.perf_counter()))  # real time
            await ws.send(audio[start : start + FRAME_BYTES])
        await ws.send(json.dumps({"type": "end"}))
        await asyncio.wait_for(reader, 120)
    first = {}
    for at, event in got:
        first.setdefault(event["type"], (at, event))
    at_transcript, heard = first["transcript"]
    speech_end = began + (heard["end_ms"] - SPEECH_PAD_MS) / 1000
    at_text, at_audio = first["text_delta"][0], first["audio_chunk"][0]
    return {
        "heard": heard["text"],
        "vad_end_ms": END_OF_TURN_MS,
        "transcript_ms": (at_transcript - speech_end) * 1000,
        "first_token_ms": (at_text - at_transcript) * 1000,
        "first_audio_ms": (at_audio - at_text) * 1000,
        "total_ms": (at_audio - speech_end) * 1000,
    }


def _typed_first_audio_ms(stack: LocalStack, prompt: str) -> float:
    sent = time.perf_counter()
    with httpx.stream(
        "POST", f"{stack.agent_url}/invocations", json={"prompt": prompt}, timeout=120
    ) as response:
        for at, event in read_events(response.iter_raw()):
            if event["type"] == "audio_chunk":
                return (at - sent) * 1000
    raise RuntimeError(f"no audio for {prompt!r}")


def run(quick: bool, out: Path) -> dict[str, Any]:
    questions = QUESTIONS[:2] if quick else QUESTIONS
    config = dataclasses.replace(EmulatorConfig.from_env(), http_port=0, h2_port=0, llm_backend="smollm2")
    rows = []
    with local_stack(config, manifest=VOICE_MANIFEST) as stack:
        ws_url = stack.agent_url.replace("http://", "ws://") + "/ws"
        spoken = {q: _spoken(stack, q) for q in questions}
        asyncio.run(_voice_turn(ws_url, spoken[questions[0]]))  # warm: the model's first answer
        for question in report.progress(questions, "questions"):
            row = {"question": question, **asyncio.run(_voice_turn(ws_url, spoken[question]))}
            row["typed_first_audio_ms"] = _typed_first_audio_ms(stack, row["heard"])
            rows.append(row)
    parts = ("transcript_ms", "first_token_ms", "first_audio_ms", "total_ms", "typed_first_audio_ms")
    summary = {part: summarize([row[part] for row in rows]) for part in parts}
    voice_ms, typed_ms = summary["total_ms"]["median_ms"], summary["typed_first_audio_ms"]["median_ms"]
    ratio = voice_ms / typed_ms
    print(
        report.table(
            ["question", "heard", "transcript", "first token", "first audio", "total", "typed"],
            [[r["question"], r["heard"], *(round(r[p]) for p in parts)] for r in rows],
        )
    )
    print(
        f"end of speech to first audio: median {voice_ms:.0f} ms "
        f"({ratio:.2f}x a typed question's first audio, {typed_ms:.0f} ms)"
    )
    result = {
        "machine": report.machine(),
        "end_of_turn_ms": END_OF_TURN_MS,
        "rows": rows,
        "summary": summary,
        "ratio_to_typed": ratio,
    }
    fig, (ax,) = report.figure("voice turn: end of speech to first audio, by part")
    labels = [r["question"][:24] for r in rows]
    left = np.zeros(len(rows))
    for part, name in (
        ("transcript_ms", "transcript (VAD wait + decode)"),
        ("first_token_ms", "model first token"),
        ("first_audio_ms", "first audio"),
    ):
        values = np.array([r[part] for r in rows])
        ax.barh(labels, values, left=left, label=name)
        left += values
    report.reference_line(ax, END_OF_TURN_MS, f"VAD end of turn {END_OF_TURN_MS} ms", horizontal=False)
    report.reference_line(ax, 2500, "target 2.5 s", horizontal=False)
    ax.set_xlabel("ms after the end of the user's speech")
    ax.legend(fontsize=7)
    return report.write(out, "voice_turn", result, fig, quick)
