"""A spoken conversation on one WebSocket (`/ws`, the path AgentCore Runtime gives an agent's WebSocket):
the microphone's audio in, the user's transcript and the agent's turns out.

In, from the client:
- BINARY frames: the microphone, 16 kHz mono s16le PCM (`facts.STT_SAMPLE_RATE`), any frame size up to
  the server's WebSocket limit (uvicorn's 16 MiB), sent as it is captured (silence too: the end of a turn
  is heard as silence); a large frame reaches the endpoint in parts (agent.stt_session);
- TEXT frames, JSON objects:
  - `{"type": "start", "mode"?, "voice"?, "format"?}`: the turns' settings, checked as POST's payload is;
  - `{"type": "played", "played_ms": N}`: how much of the latest turn's audio the client has played
    (sent while it plays; without it, a listener is assumed to play in real time from the first chunk);
  - `{"type": "interrupt", "played_ms": N}`: the listener stopped the answer (a Stop button), having
    played N ms of it: the turn stops as a barge-in does;
  - `{"type": "end"}`: no more audio; the conversation ends once the last utterance's turn is over.

Out, TEXT frames, one event each (agent.events): `user_speech_started`, `transcript_partial`,
`user_paused`, `transcript`, `answer_resumed` and `turn_discarded` on this conversation's clock; each
turn's own events as POST /invocations streams them. `listening_end` is the last, then the agent closes
the WebSocket.

The audio goes on, as it arrives, to the speech-to-text endpoint over one bidirectional stream
(agent.stt_session), whose voice activity detector and turn model decide where an utterance starts and
ends. Each utterance's final transcript is the next turn's prompt; with `TurnTaking.preempt_complete`
the turn starts at the pause that leans finished, its events held until the final says the same words
(agent.turn_taking). When the user starts talking while a turn is running, the client pauses the answer
at once (before the words are known: waiting for the final would let the answer talk over them for the
silence and the decode); with `TurnTaking.backchannels`, an utterance that is a backchannel or a noise
resumes it (`answer_resumed`), anything else is a barge-in: the turn stops, with what the listener had
heard up to the pause recorded in the history (agent.barge_in), and the new utterance becomes the next
turn. Without them, any voice is a barge-in the moment it is heard.

Bad input is answered with a typed `error` event and the conversation goes on; the endpoint failing
ends it with one (`stt_stream_error`), never silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.websockets import WebSocket, WebSocketState

from agent.endpoint_stream import EndpointStreamError
from agent.events import (
    Event,
    EventClock,
    TurnError,
    answer_resumed,
    error,
    listening_end,
    transcript,
    transcript_partial,
    turn_discarded,
    user_paused,
    user_speech_started,
)
from agent.stt_session import STTSession
from agent.turn_taking import (
    CONTINUATION_HEARD_MS,
    CONTINUATION_S,
    Playback,
    Speculation,
    TurnTaking,
    ignorable,
    same_words,
    takes_the_turn_early,
)

TurnEvents = Callable[[Any, str | None], AsyncIterator[Event]]
"""The agent's turns: a payload (as POST /invocations takes it) and a session id in, events out."""
OpenSTT = Callable[[], Awaitable[STTSession]]
CheckSettings = Callable[[dict[str, Any]], None]
"""Raises a TurnError when `start`'s settings would not make a turn."""
PLAIN_RULES = TurnTaking()
SETTINGS = ("mode", "voice", "format")
MAX_PLAYED_MS = 86_400_000
# A turn let go of in this long after an interrupt (agent.model.RELEASE_WAIT_S bounds each wait in it).
TURN_RELEASE_S = 10.0

log = logging.getLogger("agent.listening")


def parse_message(text: str) -> dict[str, Any]:
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        raise TurnError("invalid_json", "a TEXT frame must be a JSON object") from None
    if not isinstance(message, dict):
        kind = type(message).__name__
        raise TurnError("invalid_message", f"a TEXT frame must be a JSON object, got {kind}")
    return message


def parse_played(message: dict[str, Any]) -> float:
    value = message.get("played_ms")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_PLAYED_MS:
        raise TurnError("invalid_played", f"'played_ms' must be a number of ms from 0 to {MAX_PLAYED_MS}")
    return float(value)


class SpokenConversation:
    """One WebSocket's conversation; `run()` serves it to its end."""

    def __init__(
        self,
        websocket: WebSocket,
        session_id: str | None,
        turn_events: TurnEvents,
        open_stt: OpenSTT,
        check_settings: CheckSettings,
        turn_taking: TurnTaking = PLAIN_RULES,
    ) -> None:
        self._ws = websocket
        self._rules = turn_taking
        # A browser cannot set AgentCore's session header: without one, this WebSocket is the session,
        # so every turn shares one history (and an interrupt reaches the turn it means).
        self._session_id = session_id or f"ws-{uuid.uuid4()}"
        self._turn_events = turn_events
        self._open_stt = open_stt
        self._check_settings = check_settings
        self._clock = EventClock()
        self._outbox: asyncio.Queue[Event | None] = asyncio.Queue()
        self._settings: dict[str, Any] = {}
        self._playback = Playback()
        self._turn: asyncio.Task[None] | None = None
        self._turns = 0
        self._utterances = 0
        self._input_ended = False
        self._held: int | None = None
        """The utterance the answer is paused for, until its words say whether it takes the turn."""
        self._speculation: tuple[Speculation, asyncio.Task[None]] | None = None
        self._work: Speculation | None = None
        """The running turn's: its prompt and what it computed."""
        self._taken_at = self._held_at = 0.0

    def _emit(self, event: Event) -> None:
        self._outbox.put_nowait(event)

    async def _send_events(self) -> None:
        while (event := await self._outbox.get()) is not None:
            if self._ws.application_state != WebSocketState.CONNECTED:
                return
            await self._ws.send_text(json.dumps(event, separators=(",", ":")))

    async def run(self) -> None:
        await self._ws.accept()
        sender = asyncio.create_task(self._send_events())
        try:
            try:
                stt = await self._open_stt()
            except EndpointStreamError as exc:
                self._emit(error(self._clock, "stt_unavailable", f"the speech-to-text endpoint: {exc}"))
                self._emit(listening_end(self._clock, 0, 0))
                return
            async with stt:
                await stt.start()
                microphone = asyncio.create_task(self._microphone(stt))
                heard = asyncio.create_task(self._transcripts(stt))
                try:
                    # The microphone ends when the client leaves (nobody hears the rest); the
                    # transcripts end after the endpoint's `done` and the last turn, or its failure.
                    await asyncio.wait({microphone, heard}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for task in (microphone, heard):
                        task.cancel()
                    await self._stop_turn()
            self._emit(listening_end(self._clock, self._utterances, self._turns))
        finally:
            self._outbox.put_nowait(None)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(sender, 10)
            sender.cancel()
            if self._ws.application_state == WebSocketState.CONNECTED:
                with contextlib.suppress(Exception):
                    await self._ws.close()

    async def _microphone(self, stt: STTSession) -> None:
        """The client's frames until it goes away: audio to the endpoint, control read here."""
        while True:
            frame = await self._ws.receive()
            if frame["type"] == "websocket.disconnect":
                return
            try:
                if (data := frame.get("bytes")) is not None:
                    if self._input_ended:
                        raise TurnError("input_ended", "audio after 'end'")
                    if data:
                        await stt.audio(data)
                elif (text := frame.get("text")) is not None:
                    await self._control(parse_message(text), stt)
            except TurnError as exc:
                self._emit(error(self._clock, exc.code, str(exc)))

    async def _control(self, message: dict[str, Any], stt: STTSession) -> None:
        kind = message.get("type")
        if kind in ("played", "interrupt"):
            self._playback.reported(parse_played(message))
            if kind == "interrupt":
                await self._interrupt()
        elif kind == "start":
            settings = {k: v for k, v in message.items() if k != "type"}
            unknown = sorted(set(settings) - set(SETTINGS))
            if unknown:
                allowed = ", ".join(SETTINGS)
                raise TurnError("invalid_field", f"'start' takes {allowed}; not {', '.join(unknown)}")
            self._check_settings(settings)
            self._settings = settings
        elif kind == "end":
            if not self._input_ended:
                self._input_ended = True
                await stt.end()
        else:
            shown = kind if isinstance(kind, str) and len(kind) <= 40 else type(kind).__name__
            expected = "start, played, interrupt or end"
            raise TurnError("unknown_type", f"unknown message type {shown!r}; expected {expected}")

    async def _transcripts(self, stt: STTSession) -> None:
        """The endpoint's messages until it ends the stream (after `end`, its `done`)."""
        try:
            async for message in stt.messages():
                try:
                    await self._heard(message)
                except (KeyError, TypeError, AttributeError):  # a message without its fields
                    shown = str(message)[:80]
                    self._emit(error(self._clock, "stt_invalid_message", f"unreadable: {shown}"))
                if message.get("type") == "done":
                    break
            if self._turn is not None:
                await asyncio.gather(self._turn, return_exceptions=True)
        except EndpointStreamError as exc:
            self._emit(error(self._clock, "stt_stream_error", f"the speech-to-text stream ended: {exc}"))

    async def _heard(self, message: dict[str, Any]) -> None:
        """One of the endpoint's messages (stt/README.md), acted on."""
        kind = message.get("type")
        if kind == "speech_started":
            self._utterances += 1
            self._emit(user_speech_started(self._clock, message["utterance"], message["start_ms"]))
            await self._barge_in(message["utterance"])
        elif kind == "partial":
            utterance, text = message["utterance"], message["text"]
            self._emit(transcript_partial(self._clock, utterance, text))
            early = self._rules.backchannels is not None and takes_the_turn_early(
                text, self._rules.backchannels
            )
            if self._held == utterance and early and not self._continuing():
                self._held = None  # real words: a barge-in now, not at the utterance's end
                await self._interrupt()
        elif kind == "pause":
            utterance, text, complete = message["utterance"], message["text"], message["complete"]
            self._emit(user_paused(self._clock, utterance, text, complete, bool(message["ends"])))
            if message.get("reads_finished", True):
                self._preempt(utterance, text, complete)
        elif kind == "speech_resumed":
            if self._speculation is not None and self._speculation[0].utterance == message["utterance"]:
                await self._discard("went_on")
        elif kind == "final":
            utterance, text = message["utterance"], message["text"]
            self._emit(transcript(self._clock, utterance, text, message["start_ms"], message["end_ms"]))
            await self._finished(utterance, text)
        elif kind == "error":
            self._emit(error(self._clock, f"stt_{message.get('code')}", str(message.get("message"))))

    def _ignorable(self, text: str) -> bool:
        return self._rules.backchannels is not None and ignorable(text, self._rules.backchannels)

    def _answering(self) -> bool:
        """A turn is running, or its audio is still playing."""
        return self._turn is not None and (not self._turn.done() or self._playback.playing())

    async def _barge_in(self, utterance: int) -> None:
        """The user started talking: over an answer, it pauses until the words are known (with
        backchannels), or is a barge-in at once (without)."""
        if self._rules.backchannels is None:
            await self._interrupt()
        elif self._held is None and self._answering():
            self._held, self._held_at = utterance, time.perf_counter()
            self._playback.pause()

    async def _finished(self, utterance: int, text: str) -> None:
        """An utterance's final: a backchannel or noise the answer paused for resumes it; a turn started
        on its pause with the same words is taken; otherwise its words are the next turn."""
        if self._held == utterance:
            self._held = None
            if self._ignorable(text):
                self._playback.resume()
                self._emit(answer_resumed(self._clock, utterance, text))
                return
            if self._continuing() and self._work is not None and self._turn is not None:
                text = f"{self._work.prompt} {text}"  # the rest of the question the answer began on
                work, task, self._work, self._turn = self._work, self._turn, None, None
                await self._throw_away(work, task, "continued")
        if self._speculation is not None:
            speculation, _ = self._speculation
            if speculation.utterance == utterance and same_words(speculation.prompt, text):
                self._adopt()
                return
            await self._discard("other_words")
        if text.strip():
            await self._start_turn(text, utterance)

    def _continuing(self) -> bool:
        """The held utterance may be the rest of the running turn's question (agent.turn_taking)."""
        return (
            self._rules.discard_turn is not None
            and self._work is not None
            and self._held_at - self._taken_at < CONTINUATION_S
            and self._playback.played_ms() < CONTINUATION_HEARD_MS
        )

    def _preempt(self, utterance: int, text: str, complete: float | None) -> None:
        """Start the turn on a pause that leans finished, its events held (agent.turn_taking)."""
        cut = self._rules.preempt_complete
        if cut is None or complete is None or complete < cut or not text.strip():
            return
        if self._held is not None or self._speculation is not None or self._answering():
            return
        speculation = Speculation(utterance, text)
        task = asyncio.create_task(self._run_turn({**self._settings, "prompt": text}, speculation))
        self._speculation = (speculation, task)

    def _adopt(self) -> None:
        assert self._speculation is not None
        speculation, task = self._speculation
        self._speculation = None
        self._turns += 1
        self._playback.turn_started()
        self._turn, self._work, self._taken_at = task, speculation, time.perf_counter()
        for event in speculation.adopt():
            self._playback.sent(event)
            self._emit(event)

    async def _discard(self, reason: str) -> None:
        """The held turn is not the turn: it stops and leaves no trace."""
        assert self._speculation is not None
        speculation, task = self._speculation
        self._speculation = None
        await self._throw_away(speculation, task, reason)

    async def _throw_away(self, work: Speculation, task: asyncio.Task[None], reason: str) -> None:
        """A turn that should not have been: it stops (model and speech), the history is as before it,
        and what it computed is counted."""
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if self._rules.discard_turn is not None:
            await self._rules.discard_turn(self._session_id)
        self._emit(turn_discarded(self._clock, work.utterance, work.prompt, reason, **work.waste()))

    async def _interrupt(self) -> None:
        """Barge-in: the running turn stops, with what the listener heard recorded; its `interrupted`
        event goes out (the turn's own `agent_end` closes it). A turn that has ended while its audio still
        plays is interrupted too (the POST path's "after the turn"): its answer is computed faster than
        real time, so a user who talks over the last sentences talks over a finished turn."""
        if self._turn is None or (self._turn.done() and not self._playback.playing()):
            return
        payload = {"interrupt": {"played_ms": self._playback.played_ms()}}
        self._playback.stopped()
        async with contextlib.aclosing(self._turn_events(payload, self._session_id)) as events:
            async for event in events:
                if event["type"] != "agent_end":
                    self._emit(event)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait({self._turn}, timeout=TURN_RELEASE_S)

    async def _start_turn(self, prompt: str, utterance: int) -> None:
        await self._interrupt()
        self._turns += 1
        self._playback.turn_started()
        self._work, self._taken_at = Speculation(utterance, prompt, adopted=True), time.perf_counter()
        self._turn = asyncio.create_task(self._run_turn({**self._settings, "prompt": prompt}, self._work))

    async def _run_turn(self, payload: dict[str, Any], speculation: Speculation | None = None) -> None:
        async with contextlib.aclosing(self._turn_events(payload, self._session_id)) as events:
            async for event in events:
                if speculation is not None and speculation.hold(event):
                    continue
                self._playback.sent(event)
                self._emit(event)

    async def _stop_turn(self) -> None:
        """The conversation is over (the client left, or the endpoint failed): its turn stops."""
        if self._speculation is not None:
            await self._discard("left")
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()
            await asyncio.gather(self._turn, return_exceptions=True)
