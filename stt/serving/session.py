"""One WebSocket session on `/invocations-bidirectional-stream`: PCM frames in, transcripts out.

The receiver reads frames: BINARY ones are 16 kHz s16le PCM (an odd trailing byte waits for the next
frame), TEXT ones (or BINARY ones that are a JSON object, see `looks_like_control`) are control. The
audio goes through the VAD's turn tracker (`stt/turns.py`) as it arrives:

- `speech_started` as soon as speech is confirmed (a client barges in on it);
- `partial` while the user talks: the growing utterance re-decoded at most every `partial_interval_ms`,
  one decode in flight at a time, so a slower machine simply gets fewer partials;
- `pause` when the speech pauses for `turn_check_ms` (`SpeechPaused`): the final decode of the audio the
  utterance ends with if it ends here started `pause_decode_ms` into the silence (`PauseBegan`), and
  the turn model (Smart Turn) judges whether it sounds finished; with both in, `pause` says what the
  transcript is, how finished it sounds and whether the turn ends here (`stt.turns.ends_turn`: on sound
  and meaning). `speech_resumed` when speech comes back after a pause;
- `final` per utterance, with its words: at the pause that ends the turn (the decode already made is
  its transcript), or after `end_of_turn_ms` of silence whatever the turn model said (the same early
  decode, when the utterance ends with the same audio).

`{"type": "end"}` finishes the open utterance, sends every final, then `done`, and closes the stream.
Bad input is answered with an `error` frame and the session goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging

import numpy as np
from starlette.websockets import WebSocket, WebSocketDisconnect

from facts import SAMPLE_BYTES
from stt.config import STTConfig
from stt.engines.whisper import Transcript
from stt.serving.model_host import ModelHost
from stt.turns import (
    PauseBegan,
    SpeechPaused,
    SpeechResumed,
    SpeechStarted,
    TurnEvent,
    TurnPolicy,
    TurnTracker,
    UtteranceEnded,
    ends_turn,
    reads_finished,
)
from stt.wire import protocol
from stt.wire.protocol import End, ProtocolError, looks_like_control, parse_control, pcm_samples

log = logging.getLogger("stt.serving.session")


def _same_audio(paused: PauseBegan | SpeechPaused, other: SpeechPaused | UtteranceEnded) -> bool:
    """Whether a pause's audio is `other`'s: the same utterance, start and length (the silence held)."""
    return (paused.utterance, paused.start_ms, len(paused.samples)) == (
        other.utterance,
        other.start_ms,
        len(other.samples),
    )


def _forget(task: asyncio.Task[Transcript]) -> None:
    """A decode whose result nobody needs: its failure is not an error of the session."""
    task.add_done_callback(lambda done: done.cancelled() or done.exception())


class Session:
    def __init__(self, websocket: WebSocket, host: ModelHost, config: STTConfig) -> None:
        assert host.vad is not None
        self._ws = websocket
        self._host = host
        self._turns = TurnTracker(TurnPolicy.from_config(config), host.vad.stream().probability)
        self._turn_complete = config.turn_complete
        self._tracking = asyncio.Lock()
        """Held while the tracker is fed (in a worker thread) and while a pause's verdict ends a turn."""
        self._judging: asyncio.Task[None] | None = None
        self._partial_interval_s = config.partial_interval_ms / 1000
        self._odd = b""
        self._ended = False
        self._send_lock = asyncio.Lock()
        self._finals: list[asyncio.Task[None]] = []
        self._partial: asyncio.Task[None] | None = None
        self._partial_at = 0.0
        self._partial_text: dict[int, str] = {}
        self._early: tuple[PauseBegan | SpeechPaused, asyncio.Task[Transcript]] | None = None
        """The final decode started at the latest pause, for the audio it decodes."""

    async def run(self) -> None:
        try:
            while True:
                frame = await self._ws.receive()
                if frame["type"] == "websocket.disconnect":
                    break
                if frame.get("text") is not None:
                    if await self._control(frame["text"]):
                        break
                elif (data := frame.get("bytes")) is not None:
                    if looks_like_control(data):
                        if await self._control(data):
                            break
                    else:
                        await self._audio(data)
        except WebSocketDisconnect:
            pass
        finally:
            for task in (self._partial, self._judging):
                if task is not None:
                    task.cancel()
            self._drop_early()
            if not self._ended:
                for task in self._finals:
                    task.cancel()
            await asyncio.gather(*self._finals, return_exceptions=True)

    async def _send(self, message: dict[str, object]) -> None:
        async with self._send_lock:
            await self._ws.send_text(json.dumps(message, separators=(",", ":")))

    async def _control(self, raw: str | bytes) -> bool:
        """Returns True when the stream has ended (after `done`)."""
        try:
            message = parse_control(raw)
            if self._ended:
                raise ProtocolError("input_ended", "the stream's input has ended")
        except ProtocolError as error:
            await self._send(error.to_json())
            return False
        if not isinstance(message, End):
            return False  # a valid `start`: the audio is what the container reads
        self._ended = True
        await self._verdict()
        async with self._tracking:
            await self._on_events(self._turns.finish())
        if self._partial is not None:
            self._partial.cancel()
        await asyncio.gather(*self._finals, return_exceptions=True)
        await self._send(protocol.done(self._turns.utterances, self._turns.audio_ms))
        await self._ws.close(1000)
        return True

    async def _audio(self, data: bytes) -> None:
        if self._ended:
            await self._send(ProtocolError("input_ended", "audio after `end`").to_json())
            return
        data = self._odd + data
        whole = len(data) // SAMPLE_BYTES * SAMPLE_BYTES
        self._odd = data[whole:]
        if whole:
            await self._verdict()
            async with self._tracking:
                events = await asyncio.to_thread(self._turns.feed, pcm_samples(data[:whole]))
                await self._on_events(events)
        self._maybe_partial()

    async def _on_events(self, events: list[TurnEvent]) -> None:
        for event in events:
            if isinstance(event, SpeechStarted):
                self._partial_at = asyncio.get_running_loop().time()
                await self._send(protocol.speech_started(event.utterance, event.start_ms))
            elif isinstance(event, PauseBegan):
                self._decode_early(event)
            elif isinstance(event, SpeechPaused):
                if self._early is not None and _same_audio(self._early[0], event):
                    decode = self._early[1]  # begun at its PauseBegan
                else:
                    decode = self._decode_early(event)
                self._early = (event, decode)
                self._judging = asyncio.create_task(self._judge(event, decode))
            elif isinstance(event, SpeechResumed):
                self._stop_judging()
                await self._send(protocol.speech_resumed(event.utterance))
            else:
                self._stop_judging()
                if self._partial is not None:
                    self._partial.cancel()
                    self._partial = None
                previous = self._finals[-1] if self._finals else None
                self._finals.append(asyncio.create_task(self._final(event, previous, self._early_for(event))))

    async def _verdict(self) -> None:
        """Wait for the pause being judged, so its verdict applies where it was asked, however fast the
        audio comes: a file streamed faster than real time is cut as the same speech spoken would be. In
        real time the audio waits at most the decode (the speech-to-text reads it in a burst after)."""
        if self._judging is not None and not self._judging.done():
            await asyncio.gather(asyncio.shield(self._judging), return_exceptions=True)

    def _stop_judging(self) -> None:
        """The pause being judged is over (the verdict that ended the turn is the caller: left alone)."""
        if self._judging is not None and self._judging is not asyncio.current_task():
            self._judging.cancel()

    async def _judge(self, paused: SpeechPaused, decode: asyncio.Task[Transcript]) -> None:
        """The pause's verdict, once the turn model and the decode are in (the model's ~45 ms is inside
        the decode's 150-400 ms): `pause` out, and the turn ended here when it sounds finished. The audio
        after the pause waits for it (`_verdict`), so nothing else ends the pause first; a session that
        ends cancels it (the decode goes on by itself, `_forget`)."""
        try:
            complete = await self._host.turn_complete(paused.samples)
            transcript = await asyncio.shield(decode)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("judging a pause failed: the turn ends at end_of_turn_ms")
            return
        ends = complete is not None and ends_turn(complete, transcript.text, self._turn_complete)
        async with self._tracking:
            if self._early is None or self._early[0] is not paused:
                return  # the pause is over: speech came back, or the bound ended the utterance
            finished = reads_finished(transcript.text)
            await self._send(protocol.pause(paused.utterance, transcript.text, complete, finished, ends))
            if ends and (ended := self._turns.end_turn(paused.utterance)) is not None:
                await self._on_events([ended])

    def _decode_early(self, pause: PauseBegan | SpeechPaused) -> asyncio.Task[Transcript]:
        """Start the final decode of the audio the utterance ends with if it ends in this pause."""
        self._drop_early()
        decode = asyncio.create_task(self._host.decode(pause.samples, final=True, offset_ms=pause.start_ms))
        self._early = (pause, decode)
        return decode

    def _early_for(self, ended: UtteranceEnded) -> asyncio.Task[Transcript] | None:
        """The early decode of exactly `ended`'s audio (the same utterance, start and length), if any."""
        early, self._early = self._early, None
        if early is None:
            return None
        paused, task = early
        if _same_audio(paused, ended):
            return task
        _forget(task)  # speech resumed after the pause: that audio is not the utterance
        return None

    def _drop_early(self) -> None:
        """Forget the early decode. It is left to finish, not cancelled: a cancelled wait lets go of the
        model's lock while its thread still decodes, and the next decode would share the cores with it."""
        if self._early is not None:
            _forget(self._early[1])
            self._early = None

    def _maybe_partial(self) -> None:
        """A partial decode of the growing utterance, when none is in flight, the interval since the last
        one ended is up, and the user is not pausing. A partial costs what the final costs (Whisper
        encodes its whole 30 s window: 650-850 ms for a short question on 2 cores), and one still in
        flight when the speech ends delays the final by what it has left: not starting one in a pause
        keeps the decoder free for the early final, which starts `pause_decode_ms` into it."""
        loop = asyncio.get_running_loop()
        if not self._turns.in_utterance or self._turns.pausing:
            return
        if self._partial is not None and not self._partial.done():
            return
        if loop.time() - self._partial_at < self._partial_interval_s:
            return
        self._partial_at = loop.time()
        self._partial = asyncio.create_task(
            self._send_partial(self._turns.utterances, self._turns.utterance_audio())
        )

    async def _send_partial(self, utterance: int, samples: np.ndarray) -> None:
        try:
            transcript = await self._host.decode(samples, final=False)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("partial decode failed")
            return
        finally:
            self._partial_at = asyncio.get_running_loop().time()
        if transcript.text and transcript.text != self._partial_text.get(utterance):
            self._partial_text[utterance] = transcript.text
            await self._send(protocol.partial(utterance, transcript.text))

    async def _final(
        self,
        event: UtteranceEnded,
        previous: asyncio.Task[None] | None,
        early: asyncio.Task[Transcript] | None,
    ) -> None:
        """Finals go out in utterance order: each waits for the one before it."""
        try:
            if early is not None:
                transcript = await early
            else:
                transcript = await self._host.decode(event.samples, final=True, offset_ms=event.start_ms)
        except Exception as exc:
            log.exception("final decode failed")
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            await self._send(
                ProtocolError("transcription_failed", f"transcription failed: {type(exc).__name__}").to_json()
            )
            return
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        self._partial_text.pop(event.utterance, None)
        await self._send(
            protocol.final(event.utterance, transcript.text, transcript.words, event.start_ms, event.end_ms)
        )
