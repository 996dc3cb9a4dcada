"""`voice_turn`: turn-taking as a user of the voice agent feels it, through the whole local stack
(compose/voice.yaml: Whisper base, Silero VAD and Smart Turn; Kokoro; the emulated Bedrock's local model,
SmolLM2 on the CPU; the agent) over the agent's `/ws`, as the web page's microphone drives it: 32 ms
frames of 16 kHz PCM, each sent when its last sample would have been spoken.

The speech is Kokoro's (decoded in this process, voice jm_kumo) and espeak-ng's (another library, en-us,
where the program is installed), resampled to 16 kHz (tools/spoken.py). Four measurements:

- latency, on one-sentence questions (texts.SPOKEN_QUESTIONS): end of speech (the transcript's `end_ms`
  less the VAD's kept pad) to the answer's first audio, in parts: the turn decision (`user_paused` that
  ends the turn), the transcript, the first token, the first audio; and whether the turn had started
  before the transcript (preemptive), from the turn's own clock;
- false ends: questions with a 0.5, 1.0 or 1.5 s thinking pause inside (texts.PAUSED_QUESTIONS): an
  utterance heard as two transcripts ended early; answered in parts, if the agent did not mend it
  (agent.turn_taking: the rest of a question over an answer just begun makes one turn of the two);
- false interruptions: over a long spoken answer, backchannels ("mm-hmm", "okay", ...) and cough-like
  noise bursts, said 1.5 s into the audio of the answer to the whole request: an `interrupted` (or a
  `turn_discarded` "continued") stops it, an `answer_resumed` (or nothing) does not; and a real
  question, which must interrupt: its first sound to `user_speech_started` (where the client pauses);
- thrown-away work: every `turn_discarded` (a turn started at a pause the user talked on after).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import websockets

from benchmarks import report
from benchmarks.stats import summarize
from benchmarks.texts import (
    BACKCHANNELS_SAID,
    INTERRUPTING_QUESTION,
    LONG_ANSWER_PROMPT,
    PAUSED_QUESTIONS,
    PAUSES_S,
    SPOKEN_QUESTIONS,
)
from emulator.config import EmulatorConfig
from emulator.manifest import VOICE_MANIFEST
from facts import STT_PCM_BYTES_PER_S
from local_stack.stack import local_stack
from stt.config import VAD_CHUNK_MS, STTConfig
from tools import spoken

FRAME_BYTES = STT_PCM_BYTES_PER_S * 32 // 1000  # 32 ms, as the page's capture.js
PAD_MS = -(-STTConfig.speech_pad_ms // VAD_CHUNK_MS) * VAD_CHUNK_MS  # the pad the VAD keeps, whole chunks
LEAD_S, TAIL_S = 0.5, 2.5
TARGET_MS = 600
# Whisper base hears these two voices' backchannels as said (tools.asr: jf_alpha "mm-hmm", "Uh-huh.",
# "Yeah", "Ok"; en-us "Yeah", "Okay", "Sure"); jm_kumo's "Yeah." is "YACHO", its "Mm-hmm." "MM Hump".
BACKCHANNEL_VOICES = ("jf_alpha", "en-us")
ANSWER_WAIT_S = 60.0
# What stops an answer: a barge-in (`interrupted`), or words taken for the rest of the question, which
# throw the answer away for a new turn (`turn_discarded` "continued", agent.turn_taking): the user hears
# it stop. A preemptive turn's discard is not one: nobody heard that turn.
STOPPED_BY = ("interrupted", "continued")


class Conversation:
    """One `/ws` conversation: microphone frames out at real time, every event in with its arrival."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.events: list[tuple[float, dict[str, Any]]] = []
        self.began = time.perf_counter()
        self._sent_s = 0.0
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            self.events.append((time.perf_counter(), json.loads(message)))

    def at(self, offset_s: float) -> float:
        """The wall time of a point `offset_s` into the microphone's audio."""
        return self.began + offset_s

    async def speak(self, pcm: bytes) -> float:
        """Sends `pcm` at real time; returns where it started in the microphone's audio (s)."""
        start = self._sent_s
        for index in range(0, len(pcm), FRAME_BYTES):
            frame = pcm[index : index + FRAME_BYTES]
            self._sent_s += len(frame) / STT_PCM_BYTES_PER_S
            await asyncio.sleep(max(0.0, self.at(self._sent_s) - time.perf_counter()))
            await self.ws.send(frame)
        return start

    async def until(
        self, kinds: set[str], within_s: float, after: float = 0.0, where: Callable[[dict], bool] = bool
    ) -> dict[str, Any] | None:
        """The first event of one of `kinds` for which `where` holds that arrived after `after`, waiting
        for it."""
        deadline = time.perf_counter() + within_s
        while time.perf_counter() < deadline:
            found = [(t, e) for t, e in self.events if e["type"] in kinds and t >= after and where(e)]
            if found:
                return found[0][1]
            await asyncio.sleep(0.01)
        return None

    def first(self, kind: str, after: float = 0.0) -> tuple[float, dict[str, Any]] | None:
        return next(((t, e) for t, e in self.events if e["type"] == kind and t >= after), None)

    def answer_audio(self) -> tuple[float, dict[str, Any]] | None:
        """The first audio of the answer to all that was said, once every utterance has its transcript:
        of the turn that began after the last one. Where the request ended early ("Tell me a long story"
        | "about a dragon ..."), the first turn is thrown away when the rest is heard, and its audio is
        not the answer's."""
        heard = [t for t, e in self.events if e["type"] == "transcript"]
        if not heard or len(heard) < len(self.all("user_speech_started")):
            return None
        began = next((t for t, e in self.events if e["type"] == "agent_start" and t >= heard[-1]), None)
        return None if began is None else self.first("audio_chunk", after=began)

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [e for _, e in self.events if e["type"] == kind]


async def _open(ws_url: str) -> Conversation:
    ws = await websockets.connect(ws_url, max_size=None)
    return Conversation(ws)


async def _latency(ws_url: str, pcm: bytes) -> dict[str, Any]:
    """One finished question: when each part of the answer's way arrived, from the end of speech."""
    talk = await _open(ws_url)
    try:
        await talk.speak(spoken.silence(LEAD_S) + pcm + spoken.silence(TAIL_S))
        await talk.until({"audio_chunk"}, ANSWER_WAIT_S)
    finally:
        await talk.ws.close()
    at_transcript, heard = talk.first("transcript") or (None, None)
    audio = talk.first("audio_chunk")
    if heard is None or audio is None:
        return {"heard": heard and heard["text"], "failed": True}
    speech_end = talk.at((heard["end_ms"] - PAD_MS) / 1000)
    decided = next((t for t, e in talk.events if e["type"] == "user_paused" and e["ends"]), at_transcript)
    at_text = talk.first("text_delta")[0]
    turn_began = audio[0] - audio[1]["t_ms"] / 1000  # the turn's own clock starts at agent_start
    return {
        "heard": heard["text"],
        "decision_ms": (decided - speech_end) * 1000,
        "transcript_ms": (at_transcript - speech_end) * 1000,
        "first_token_ms": (at_text - at_transcript) * 1000,
        "first_audio_ms": (audio[0] - at_text) * 1000,
        "total_ms": (audio[0] - speech_end) * 1000,
        "model_ttft_ms": talk.first("text_delta")[1]["t_ms"],
        "model_ttfa_ms": audio[1]["t_ms"],
        "head_start_ms": max(0.0, (at_transcript - turn_began) * 1000),
        "discarded": talk.all("turn_discarded"),
    }


async def _paused(ws_url: str, pcm: bytes) -> dict[str, Any]:
    """One question with a pause inside: how many transcripts it became."""
    talk = await _open(ws_url)
    try:
        await talk.speak(spoken.silence(LEAD_S) + pcm + spoken.silence(TAIL_S))
        await talk.until({"transcript"}, 5.0)
    finally:
        await talk.ws.close()
    return {
        "transcripts": [e["text"] for e in talk.all("transcript")],
        "pauses": [(e["complete"], e["ends"]) for e in talk.all("user_paused")],
        "discarded": talk.all("turn_discarded"),
    }


async def _over_the_answer(ws_url: str, question: bytes, over: bytes) -> dict[str, Any]:
    """Ask for a long answer; 1.5 s into its audio, say `over`: what the agent made of it. The 1.5 s run
    from the answer to the whole request (`Conversation.answer_audio`): timed from a thrown-away turn's
    audio, `over` came inside the mended one's first second, where words are the rest of the question
    (agent.turn_taking), not a barge-in, or before the request's own rest was heard."""
    talk = await _open(ws_url)
    try:
        await talk.speak(spoken.silence(LEAD_S) + question)
        deadline = time.perf_counter() + ANSWER_WAIT_S
        while (audio := talk.answer_audio()) is None or time.perf_counter() < audio[0] + 1.5:
            if time.perf_counter() > deadline:
                return {"verdict": "no answer", "heard_after_ms": None, "heard": [], "partials": []}
            await talk.speak(spoken.silence(0.096))  # the microphone streams on, as a page's does
        said_at = talk.at(await talk.speak(over) + _onset_s(over))
        await talk.speak(spoken.silence(2.5))
        verdict = await talk.until(
            {"interrupted", "answer_resumed", "turn_discarded"},
            4.0,
            after=said_at,
            where=lambda e: e["type"] != "turn_discarded" or e["reason"] == "continued",
        )
        started = talk.first("user_speech_started", after=said_at)
    finally:
        await talk.ws.close()
    return {
        "verdict": (verdict.get("reason") or verdict["type"]) if verdict else "none",
        "heard_after_ms": round((started[0] - said_at) * 1000, 1) if started else None,
        "heard": [e["text"] for t, e in talk.events if e["type"] == "transcript" and t >= said_at],
        "partials": [e["text"] for t, e in talk.events if e["type"] == "transcript_partial" and t >= said_at],
    }


def _onset_s(pcm: bytes) -> float:
    """Where the sound in `pcm` begins (a voice's rendering opens with silence): its first 10 ms
    louder than -34 dBFS."""
    samples = np.abs(np.frombuffer(pcm, dtype="<i2").astype(np.float32)) / 32768
    blocks = samples[: len(samples) // 160 * 160].reshape(-1, 160).max(axis=1)
    loud = np.flatnonzero(blocks > 0.02)
    return float(loud[0]) / 100 if loud.size else 0.0


def _voices() -> list[str]:
    return [spoken.KOKORO_VOICES[0], *([spoken.ESPEAK_VOICES[0]] if spoken.espeak_available() else [])]


def _measure(ws_url: str, quick: bool) -> dict[str, Any]:
    voices = _voices()[:1] if quick else _voices()
    questions = SPOKEN_QUESTIONS[:2] if quick else SPOKEN_QUESTIONS
    paused = PAUSED_QUESTIONS[:2] if quick else PAUSED_QUESTIONS
    asyncio.run(_latency(ws_url, spoken.say(questions[0], voices[0])))  # warm: the model's first answer
    latency = [
        {"question": q, "voice": v, **asyncio.run(_latency(ws_url, spoken.say(q, v)))}
        for q, v in report.progress([(q, v) for v in voices for q in questions], "questions")
    ]
    pauses = [
        {"question": q, "after_words": n, "pause_s": p, "voice": v}
        for v in voices
        for q, n in paused
        for p in (PAUSES_S[1:2] if quick else PAUSES_S)
    ]
    for row in report.progress(pauses, "paused questions"):
        pcm = spoken.with_pause(row["question"], row["after_words"], row["pause_s"], row["voice"])
        row.update(asyncio.run(_paused(ws_url, pcm)))
    ask = spoken.say(LONG_ANSWER_PROMPT, voices[0])
    tries = 2 if quick else 10
    overs = [
        ("backchannel", spoken.say(BACKCHANNELS_SAID[i % len(BACKCHANNELS_SAID)], voices[i % len(voices)]))
        for i in range(tries)
    ]
    overs += [("cough", spoken.cough(seed=i)) for i in range(tries)]
    overs += [("question", spoken.say(INTERRUPTING_QUESTION, voices[0])) for _ in range(2 if quick else 5)]
    over = [
        {"kind": kind, **asyncio.run(_over_the_answer(ws_url, ask, pcm))}
        for kind, pcm in report.progress(overs, "over the answer")
    ]
    return {"latency": latency, "paused": pauses, "over": over}


def _summary(measured: dict[str, Any]) -> dict[str, Any]:
    rows = [r for r in measured["latency"] if not r.get("failed")]
    parts = (
        "decision_ms",
        "transcript_ms",
        "first_token_ms",
        "first_audio_ms",
        "total_ms",
        "model_ttft_ms",
        "model_ttfa_ms",
        "head_start_ms",
    )
    ended_early = [r for r in measured["paused"] if len(r["transcripts"]) > 1]
    # what the user gets: an early end the agent mended (the rest of the question came over an answer
    # just begun, which it threw away) is one answer to the whole question
    answered_in_parts = [
        r
        for r in ended_early
        if len(r["transcripts"]) - sum(d["reason"] == "continued" for d in r["discarded"]) > 1
    ]
    over = measured["over"]
    stopped = {
        kind: sum(1 for r in over if r["kind"] == kind and r["verdict"] in STOPPED_BY)
        for kind in ("backchannel", "cough", "question")
    }
    tries = {kind: sum(1 for r in over if r["kind"] == kind) for kind in stopped}
    discarded = [
        d for group in ("latency", "paused") for r in measured[group] for d in r.get("discarded", [])
    ]
    return {
        **{part: summarize([r[part] for r in rows]) for part in parts},
        "failed_turns": len(measured["latency"]) - len(rows),
        "preempted_turns": sum(1 for r in rows if r["head_start_ms"] > 0),
        "paused_questions": len(measured["paused"]),
        "ended_early": len(ended_early),
        "false_end_rate": round(len(ended_early) / max(1, len(measured["paused"])), 3),
        "answered_in_parts": len(answered_in_parts),
        "answered_in_parts_rate": round(len(answered_in_parts) / max(1, len(measured["paused"])), 3),
        "stopped_by": stopped,
        "tries": tries,
        "question_heard_after_ms": summarize(
            [r["heard_after_ms"] for r in over if r["kind"] == "question" and r["heard_after_ms"] is not None]
        ),
        "discarded_turns": len(discarded),
        "discarded_ran_ms": round(sum(d["ran_ms"] for d in discarded), 1),
        "discarded_text_chars": sum(d["text_chars"] for d in discarded),
        "discarded_audio_chunks": sum(d["audio_chunks"] for d in discarded),
    }


def _print(measured: dict[str, Any], summary: dict[str, Any]) -> None:
    cells = ("decision_ms", "transcript_ms", "first_token_ms", "first_audio_ms", "total_ms", "head_start_ms")
    print(
        report.table(
            [
                "question",
                "voice",
                "heard",
                "decision",
                "transcript",
                "first token",
                "first audio",
                "total",
                "head start",
            ],
            [
                [r["question"], r["voice"], r.get("heard"), *(round(r[c]) if c in r else "-" for c in cells)]
                for r in measured["latency"]
            ],
        )
    )
    total = summary["total_ms"]
    print(
        f"end of speech to first audio: median {total.get('median_ms', 0):.0f} ms, "
        f"p90 {total.get('p90_ms', 0):.0f} ms"
    )
    print(
        f"paused questions ended early: {summary['ended_early']} of {summary['paused_questions']} "
        f"(answered in parts, after the agent mended what it could: {summary['answered_in_parts']})"
    )
    print(f"stopped the answer: {summary['stopped_by']} of {summary['tries']}")
    print(
        f"turns thrown away: {summary['discarded_turns']} ({summary['discarded_ran_ms']:.0f} ms of turns, "
        f"{summary['discarded_audio_chunks']} audio chunks)"
    )


def _figure(measured: dict[str, Any]) -> Any:
    fig, (ax,) = report.figure("voice turn: end of speech to first audio, by part")
    rows = [r for r in measured["latency"] if not r.get("failed")]
    labels = [f"{r['question'][:22]} ({r['voice']})" for r in rows]
    left = np.zeros(len(rows))
    for part, name in (
        ("transcript_ms", "turn decision and transcript"),
        ("first_token_ms", "model first token"),
        ("first_audio_ms", "first audio"),
    ):
        values = np.array([max(0.0, r[part]) for r in rows])
        ax.barh(labels, values, left=left, label=name)
        left += values
    report.reference_line(ax, TARGET_MS, f"target median {TARGET_MS} ms", horizontal=False)
    ax.set_xlabel("ms after the end of the user's speech")
    ax.tick_params(axis="y", labelsize=6)
    ax.legend(fontsize=7)
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    config = dataclasses.replace(EmulatorConfig.from_env(), http_port=0, h2_port=0, llm_backend="smollm2")
    with local_stack(config, manifest=VOICE_MANIFEST) as stack:
        measured = _measure(stack.agent_url.replace("http://", "ws://") + "/ws", quick)
    summary = _summary(measured)
    _print(measured, summary)
    result = {
        "machine": report.machine(),
        "stt": dataclasses.asdict(STTConfig()),
        **measured,
        "summary": summary,
    }
    result["stt"]["cache_dir"] = str(result["stt"]["cache_dir"])
    return report.write(out, "voice_turn", result, _figure(measured), quick)
