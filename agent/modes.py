"""The two ways to speak an answer, producing the same events.

- bidi: two concurrent tasks feed one queue. The text task streams the model's deltas through the
  sentence chunker and sends each sentence the moment it is complete; the audio task relays what the
  endpoint sends back. Events come out in real arrival order, so the first sentence plays while the
  model is still writing the fourth.
- batch: the baseline. Wait for the whole answer, then synthesize it as one message.

What is sent is what the model wrote (the container turns it into speech text, `tts/text/speech_text.py`);
the agent only leaves out what has nothing to say aloud (a code block's lines, a line of emoji), so no
chunk of the answer becomes a `nothing_to_speak` error.

Both open the TTS session at the start of the turn (overlapping the model's first-token latency), so
the comparison measures only when text is sent, not connection setup.

Both relay the container's word timings as `words` events on the turn's audio timeline
(agent.barge_in.AudioTimeline) and keep them in the turn's `SpokenTurn`; both stop when it is
interrupted (barge-in): the turn ends with `agent_end` (`interrupted: true`), and releasing its TTS
session cancels what the container still has queued. `agent_end.audio_s` is the audio the client was
sent: PCM counted by its bytes, so an interrupted turn reports what it streamed (a codec's chunks carry
no duration: there it is the requests the container completed).

Text work (the chunker, speech text) never runs on the event loop, where it would hold every other
session's audio and the runtime's `/ping` (which the emulator answers by replacing the replica): it runs
in a worker thread, one call at a time in the answer's order, on pieces of at most MAX_CHUNK_CHARS. A
thread alone is not enough: one regular-expression call is C code that holds the GIL to its end (speech
text on 20,000 `[` was one 1.5 s `re.sub` here, 20,000 backticks 5.3 s), so the size of each call is what
bounds how long the loop can wait.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from agent.barge_in import AudioTimeline, Interrupted, SpokenTurn, parse_words
from agent.chunker import IncrementalSentenceChunker, split_sentences
from agent.endpoint_stream import Audio, EndpointStreamError
from agent.events import (
    Event,
    EventClock,
    TurnError,
    agent_end,
    agent_start,
    audio_chunk,
    audio_stream_end,
    audio_stream_start,
    error,
    queued,
    text_delta,
    words,
)
from agent.tts_session import TTSSession
from facts import BATCH, BIDI, DEFAULT_VOICE, PCM_BYTES_PER_S
from tts.text.speech_text import MarkdownBlocks

TextSource = Callable[[str], AsyncIterator[str]]
SessionOpener = Callable[[], Awaitable[TTSSession]]
Emit = Callable[[Event], None]

log = logging.getLogger("agent.modes")


@dataclass(frozen=True)
class Turn:
    prompt: str
    mode: str = BIDI
    voice: str = DEFAULT_VOICE
    audio_format: str = "pcm"
    first_fragment_min_words: int | None = None
    first_fragment_max_words: int | None = None

    @property
    def pcm(self) -> bool:
        return self.audio_format == "pcm"


MAX_CHUNK_CHARS = 500
"""The longest piece of text one text-work call sees (the chunker cuts a longer sentence at a clause,
else a space). A sentence of 500 characters is about 30 s of speech; speech text on 500 characters
cost at most 3.6 ms here on the worst inputs of issue 33 (backticks; `[`, unclosed ` *a`, a long
heading, a table row, dots, a URL: 0.2-1.2 ms), against 5.3 s for 20,000 backticks."""


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_DONE = object()


@dataclass
class _Tally:
    """What the turn produced, for `agent_end`."""

    pcm: bool = True
    text: str = ""
    sentences: int = 0
    ttft_ms: float | None = None
    ttfa_ms: float | None = None
    audio_s: float = 0.0
    interrupted: bool = False

    def end_event(self, clock: EventClock, ok: bool) -> Event:
        return agent_end(
            clock,
            ok,
            text=self.text,
            sentences=self.sentences,
            ttft_ms=self.ttft_ms,
            ttfa_ms=self.ttfa_ms,
            audio_s=round(self.audio_s, 3),
            interrupted=self.interrupted,
        )

    def sent(self, event: Event) -> None:
        """`event` reached the client: PCM audio counts by its bytes (`facts.PCM_BYTES_PER_S`)."""
        if self.pcm and event["type"] == "audio_chunk":
            data = event["data"]
            pcm_bytes = len(data) // 4 * 3 - data[-2:].count("=")  # base64's length, not a decode
            self.audio_s += pcm_bytes / PCM_BYTES_PER_S


def _start_event(clock: EventClock, turn: Turn) -> Event:
    return agent_start(clock, turn.mode, turn.voice, turn.audio_format)


async def _audio_events(
    session: TTSSession, clock: EventClock, turn: Turn, tally: _Tally, spoken: SpokenTurn
) -> AsyncIterator[Event]:
    """Relay everything the endpoint sends until it closes the session; an error once a turn (bidi sends
    each sentence as its own request, and an unknown voice is refused for every one of them)."""
    seq = words_seq = 0
    told: set[tuple[str, str]] = set()
    complete_s = 0.0
    sentence: int | None = None
    timeline = AudioTimeline(pcm=turn.pcm)
    async for chunk in session.chunks():
        if isinstance(chunk, Audio):
            if seq == 0:
                tally.ttfa_ms = clock.ms()
                yield audio_stream_start(clock, turn.audio_format, turn.voice)
            timeline.audio(chunk.data)
            yield audio_chunk(clock, seq, chunk.data, sentence)
            seq += 1
        elif chunk.type == "synthesis_start":
            rid = str(chunk.message.get("request_id", ""))
            timeline.request_started(rid)
            sentence = int(rid[1:]) if rid[1:].isdigit() else None
        elif chunk.type == "words":
            heard = timeline.on_turn(
                str(chunk.message.get("request_id", "")), parse_words(chunk.message.get("words"))
            )
            spoken.words += heard
            yield words(clock, words_seq, heard)
            words_seq += 1
        elif chunk.type == "synthesis_complete":
            duration_s = float(chunk.message.get("duration_s", 0.0))
            timeline.request_complete(duration_s)
            complete_s += duration_s
            if not turn.pcm:
                tally.audio_s += duration_s
        elif chunk.type == "queued":
            position = chunk.message.get("position")
            yield queued(clock, position if isinstance(position, int) else 0)
        elif chunk.type == "error":
            said = (str(chunk.message.get("code", "tts_error")), str(chunk.message.get("message", "")))
            if said not in told:
                told.add(said)
                yield error(clock, *said)
    if seq:
        yield audio_stream_end(clock, seq, complete_s)


async def _merged(
    interrupt: asyncio.Event, *producers: Callable[[Emit], Awaitable[None]]
) -> AsyncIterator[Event]:
    """Run producers concurrently; yield what they emit in arrival order; re-raise the first failure;
    raise `Interrupted` as soon as `interrupt` is set."""
    queue: asyncio.Queue[Event | object] = asyncio.Queue()

    async def watch() -> None:
        await interrupt.wait()
        queue.put_nowait(_Failed(Interrupted()))

    async def run(producer: Callable[[Emit], Awaitable[None]]) -> None:
        try:
            await producer(queue.put_nowait)
        except Exception as exc:
            queue.put_nowait(_Failed(exc))
        finally:
            queue.put_nowait(_DONE)

    tasks = [asyncio.create_task(run(p)) for p in producers]
    watcher = asyncio.create_task(watch())
    try:
        remaining = len(tasks)
        while remaining:
            item = await queue.get()
            if interrupt.is_set():  # ahead of what is queued: not one more audio chunk once interrupted
                raise Interrupted()
            if item is _DONE:
                remaining -= 1
            elif isinstance(item, _Failed):
                raise item.exc
            else:
                yield item  # type: ignore[misc]
    finally:
        for task in [*tasks, watcher]:
            task.cancel()
        await asyncio.gather(*tasks, watcher, return_exceptions=True)


async def _guarded(
    events: AsyncIterator[Event], clock: EventClock, tally: _Tally, spoken: SpokenTurn
) -> AsyncIterator[Event]:
    """Turn a failure into a typed `error` event; always finish with `agent_end`. A turn that ran to
    its end is `spoken.complete`."""
    ok = True
    try:
        async for event in events:
            ok = ok and event["type"] != "error"
            yield event
            tally.sent(event)
        spoken.complete = True
    except Interrupted:
        tally.interrupted = True
    except EndpointStreamError as exc:
        ok = False
        yield error(clock, "tts_stream_error", str(exc))
    except TurnError as exc:
        ok = False
        yield error(clock, exc.code, str(exc))
    except Exception as exc:
        ok = False
        yield error(clock, type(exc).__name__, str(exc) or type(exc).__name__)
    yield tally.end_event(clock, ok)


class _Sentences:
    """The chunker and the code-block state of one bidi turn: what the model writes in, the sentences
    there is something to say for out (a code block's lines, a line of emoji are left out). Called in
    a worker thread, one call at a time."""

    def __init__(self, turn: Turn) -> None:
        self._chunker = IncrementalSentenceChunker(
            first_fragment_min_words=turn.first_fragment_min_words,
            first_fragment_max_words=turn.first_fragment_max_words,
            max_chunk_chars=MAX_CHUNK_CHARS,
        )
        self._blocks = MarkdownBlocks()

    def feed(self, delta: str) -> list[str]:
        return [sentence for sentence in self._chunker.feed(delta) if self._blocks.speak(sentence)]

    def flush(self) -> list[str]:
        rest = self._chunker.flush()
        return [rest] if rest and self._blocks.speak(rest) else []


def _speakable(text: str) -> bool:
    """Whether a whole answer has anything to say aloud (batch), looked at MAX_CHUNK_CHARS at a time.
    Called in a worker thread."""
    blocks = MarkdownBlocks()
    return any(blocks.speak(chunk) for chunk in split_sentences(text, max_chunk_chars=MAX_CHUNK_CHARS))


async def run_bidi(
    turn: Turn, model: TextSource, open_session: SessionOpener, spoken: SpokenTurn | None = None
) -> AsyncIterator[Event]:
    clock, tally, spoken = EventClock(), _Tally(pcm=turn.pcm), spoken or SpokenTurn()
    yield _start_event(clock, turn)
    session_task = asyncio.ensure_future(open_session())

    async def speak_text(emit: Emit) -> None:
        sentences = _Sentences(turn)
        session = await session_task

        async def speak(spoken_sentences: list[str]) -> None:
            for sentence in spoken_sentences:
                await session.synthesize(sentence, f"s{tally.sentences}", turn.voice, turn.audio_format)
                tally.sentences += 1

        delta_seq = 0
        async for delta in model(turn.prompt):
            tally.ttft_ms = tally.ttft_ms if tally.ttft_ms is not None else clock.ms()
            tally.text += delta
            emit(text_delta(clock, delta_seq, delta))
            delta_seq += 1
            await speak(await asyncio.to_thread(sentences.feed, delta))
        await speak(await asyncio.to_thread(sentences.flush))
        await session.finish()

    async def relay_audio(emit: Emit) -> None:
        async for event in _audio_events(await session_task, clock, turn, tally, spoken):
            emit(event)

    try:
        merged = _merged(spoken.interrupt_requested, speak_text, relay_audio)
        async for event in _guarded(merged, clock, tally, spoken):
            yield event
    finally:
        await _release(session_task)


async def run_batch(
    turn: Turn, model: TextSource, open_session: SessionOpener, spoken: SpokenTurn | None = None
) -> AsyncIterator[Event]:
    clock, tally, spoken = EventClock(), _Tally(pcm=turn.pcm), spoken or SpokenTurn()
    yield _start_event(clock, turn)
    session_task = asyncio.ensure_future(open_session())

    async def answer_then_speak(emit: Emit) -> None:
        delta_seq = 0
        async for delta in model(turn.prompt):
            tally.ttft_ms = tally.ttft_ms if tally.ttft_ms is not None else clock.ms()
            tally.text += delta
            emit(text_delta(clock, delta_seq, delta))
            delta_seq += 1
        session = await session_task
        if await asyncio.to_thread(_speakable, tally.text):
            await session.synthesize(tally.text.strip(), "s0", turn.voice, turn.audio_format)
            tally.sentences = 1
        await session.finish()
        async for event in _audio_events(session, clock, turn, tally, spoken):
            emit(event)

    try:
        merged = _merged(spoken.interrupt_requested, answer_then_speak)
        async for event in _guarded(merged, clock, tally, spoken):
            yield event
    finally:
        await _release(session_task)


_RELEASING: set[asyncio.Task[None]] = set()
# A turn waits this long for its session to close, then ends while the close goes on by itself. A close
# takes milliseconds; an interrupted turn's close that hung (the official client waiting on a stream the
# endpoint had not answered yet) held the turn's end, so the barge-in that had stopped it waited its
# 15 s and was refused as session_busy (tests/integration/test_barge_in.py [before-audio]: 1 run in 3 before).
CLOSE_WAIT_S = 2.0
# A close still not done after this is given up, with a warning: the stream is dropped with its client.
CLOSE_TIMEOUT_S = 30.0


async def _release(session_task: asyncio.Future[TTSSession]) -> None:
    """Release the session whether the turn finished, failed or was abandoned (barge-in, a client
    that went away). An abandoned turn is being cancelled, and every await of a cancelled task fails
    at once, so the release runs as a task of its own and finishes regardless; the turn waits for it
    up to CLOSE_WAIT_S."""
    release = asyncio.ensure_future(_close(session_task))
    _RELEASING.add(release)
    release.add_done_callback(_RELEASING.discard)
    await asyncio.wait({release}, timeout=CLOSE_WAIT_S)


async def _close(session_task: asyncio.Future[TTSSession]) -> None:
    """Close the session; a failure to close is logged, never raised: the turn's events are already
    out, and an exception here would cut the client's response after its `agent_end`."""
    if not session_task.done():
        session_task.cancel()
    try:
        session = await session_task
    except (asyncio.CancelledError, Exception):
        return
    try:
        async with asyncio.timeout(CLOSE_TIMEOUT_S):
            await session.aclose()
    except TimeoutError:
        log.warning("closing the TTS session did not finish within %.0f s; dropped", CLOSE_TIMEOUT_S)
    except (asyncio.CancelledError, Exception):
        log.warning("closing the TTS session failed", exc_info=True)


RUNS = {BIDI: run_bidi, BATCH: run_batch}
"""Each mode (`facts.MODES`) and the run that speaks it."""
