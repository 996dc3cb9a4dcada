"""One WebSocket session on `/invocations-bidirectional-stream`.

Two tasks: the receiver parses every frame (TEXT or BINARY, since SageMaker delivers BINARY frames
unless the client says UTF8), queues synthesize messages on the scheduler at once and answers
cancel/close; the sender writes each request's `synthesis_start`, audio frames and
`synthesis_complete` in message order (with `"timestamps": true`, each segment's `words` frame before
the segment's first audio frame). Bad input is answered with an `error` frame and the session
goes on; only `close` or a disconnect ends it.

Barge-in: the sender checks for a cancel before every audio frame and yields to the receiver after
each one, so a cancel stops the audio of every request it names at the next frame, computed or not.
Audio the socket already took cannot be recalled, so with `send_ahead_s` the sender keeps at most
that much unplayed audio ahead of the listener (real-time pacing): a barge-in then stops what the
client hears within that lead, whatever the network buffers hold.
Replies are JSON with non-ASCII escaped, so no reply can fail to encode.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

from starlette.websockets import WebSocket, WebSocketDisconnect

from tts.scheduling.admission import Queued
from tts.scheduling.scheduler import Job, Scheduler
from tts.serving.metrics import publish_error
from tts.serving.streaming import AudioStats, SynthesisFailed, audio_frames
from tts.text.timings import TimedWords
from tts.wire import protocol
from tts.wire.audio import pcm_seconds
from tts.wire.protocol import Cancel, Catalog, Close, ProtocolError, Synthesize, parse_message

log = logging.getLogger("tts.serving.session")


class Session:
    def __init__(
        self,
        websocket: WebSocket,
        scheduler: Scheduler,
        catalog: Catalog,
        frame_bytes: int,
        send_ahead_s: float = 0.0,
    ) -> None:
        self._ws = websocket
        self._scheduler = scheduler
        self._catalog = catalog
        self._frame_bytes = frame_bytes
        self._frame_s = pcm_seconds(frame_bytes)
        self._send_ahead_s = send_ahead_s
        self._played_until = 0.0  # loop time at which the client has played every frame sent so far
        self._outbox: asyncio.Queue[Job | None] = asyncio.Queue()
        self._jobs: dict[str, Job] = {}

    async def run(self) -> None:
        sender = asyncio.create_task(self._send_loop())
        closing = False
        try:
            closing = await self._receive_loop()
        except WebSocketDisconnect:
            pass
        finally:
            self._scheduler.closed(self)  # its slot frees once what it asked for is computed
            if closing:
                self._outbox.put_nowait(None)
                with contextlib.suppress(WebSocketDisconnect):
                    await sender
                    await self._ws.close(1000)
            # The client went away, before its `close` or while what it asked for was still being sent:
            # nobody reads the rest. Left queued, its audio would stop at the scheduler's bound on
            # unread audio (AHEAD_LIMIT_BYTES) and hold the session's slot until the replica stops.
            for job in list(self._jobs.values()):
                self._scheduler.cancel(job)
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)

    async def _receive_loop(self) -> bool:
        """Returns True when the client asked to close, False when it went away."""
        while True:
            frame = await self._ws.receive()
            if frame["type"] == "websocket.disconnect":
                return False
            raw = frame.get("text") if frame.get("text") is not None else frame.get("bytes")
            if raw is None:
                continue
            try:
                message = parse_message(raw, self._catalog)
                if isinstance(message, Synthesize):
                    self._submit(message)
                elif isinstance(message, Cancel):
                    cancelled = self._cancel(message.request_id)
                    await self._send_json(protocol.cancelled(cancelled))
                elif isinstance(message, Close):
                    return True
                else:  # Voices: answered at once, between the audio frames of any request in progress
                    await self._send_json(protocol.voice_list(self._catalog))
            except ProtocolError as error:
                publish_error(error.code)
                await self._send_json(error.to_json())

    async def _pace(self) -> None:
        """Before each audio frame: wait while more than `send_ahead_s` of sent audio is unplayed, and in
        any case yield once, so that the receiver can act on a cancel before the frame goes out."""
        loop = asyncio.get_running_loop()
        ahead = self._played_until - loop.time()
        await asyncio.sleep(max(0.0, ahead - self._send_ahead_s) if self._send_ahead_s else 0)
        self._played_until = max(self._played_until, loop.time()) + self._frame_s

    async def _send_json(self, message: dict[str, object]) -> None:
        await self._ws.send_text(json.dumps(message, separators=(",", ":")))

    def _submit(self, message: Synthesize) -> None:
        if message.request_id in self._jobs:
            raise ProtocolError(
                "duplicate_request_id",
                f"request {message.request_id!r} is still in progress",
                message.request_id,
            )
        job = self._scheduler.submit(self, message)
        self._jobs[message.request_id] = job
        self._outbox.put_nowait(job)

    def _cancel(self, request_id: str | None) -> list[str]:
        targets = list(self._jobs) if request_id is None else [request_id] if request_id in self._jobs else []
        for rid in targets:
            self._scheduler.cancel(self._jobs.pop(rid))
        return targets

    async def _send_loop(self) -> None:
        while (job := await self._outbox.get()) is not None:
            if not job.cancelled:
                try:
                    await self._send_job(job)
                except WebSocketDisconnect:
                    raise
                except Exception as exc:  # an encoder or engine fault costs this request, not the session
                    log.exception("sending request %s failed", job.request.request_id)
                    publish_error("synthesis_failed")
                    self._scheduler.cancel(job)
                    await self._send_json(
                        ProtocolError(
                            SynthesisFailed.code,
                            str(SynthesisFailed.of(exc, job.request.request_id)),
                            job.request.request_id,
                        ).to_json()
                    )
            self._jobs.pop(job.request.request_id, None)

    async def _send_job(self, job: Job) -> None:
        request = job.request
        await self._send_json(protocol.synthesis_start(request))
        stats = AudioStats()
        try:
            async for frame in audio_frames(
                job, self._frame_bytes, stats, lambda: self._scheduler.load, places=True
            ):
                if isinstance(frame, TimedWords):
                    await self._send_json(protocol.words(request, frame))
                    continue
                if isinstance(frame, Queued):
                    await self._send_json(protocol.queued(request, frame.position))
                    continue
                await self._pace()
                if job.cancelled:
                    return
                await self._ws.send_bytes(frame)
        except SynthesisFailed as exc:
            await self._send_json(ProtocolError(exc.code, str(exc), request.request_id).to_json())
            return
        if job.cancelled:
            return
        elapsed = time.perf_counter() - job.submitted_at
        await self._send_json(
            protocol.synthesis_complete(
                request, stats.duration_s, stats.audio_bytes, job.segment_count, elapsed
            )
        )
