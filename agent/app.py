"""The AgentCore app: `POST /invocations` with `{"prompt", "mode"?, "voice"?, "format"?}` streams the
turn's events as Server-Sent Events; `WS /ws` is a spoken conversation (microphone audio in, transcripts
and the same turns' events out: agent.listening); `GET /ping` is AgentCore's health check; `GET /` is
the web page.

Barge-in: `{"interrupt": {"played_ms": N}}`, alone or with a new turn's fields, on the same runtime
session, says the listener heard N ms of the session's latest turn: that turn stops (speech and model)
and the history records what was heard (agent.model.Conversation.interrupt); the answer starts with an
`interrupted` event, then the new turn's events (or `agent_end` alone).

The entrypoint returns its own `StreamingResponse` (which the SDK passes through) instead of yielding
dicts for the SDK to stream: the SDK bridges a generator through a worker thread and, when the client
goes away, abandons it without closing it, so the turn would keep its TTS session open and the
endpoint would keep computing audio nobody hears. Here the turn's generator is the response body:
a disconnect cancels it, and the turn cancels its speech (barge-in) and stops its model
(agent.model.text_deltas). Payload errors, and a turn asked of a session that is still answering one,
are answered in-band with a typed `error` event and `agent_end`; a body that cannot be parsed is the
SDK's 400. What browsers may and may not do here (the page's security headers, a cross-origin POST
refused with 403) is agent.browser_guard.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.websockets import WebSocket

from agent.browser_guard import NOSNIFF, cross_origin_refusal, foreign_origin, host_refusal, page_headers
from agent.config import AgentConfig
from agent.endpoint_stream import EndpointStreamError
from agent.events import Event, EventClock, TurnError, agent_end, error, interrupted
from agent.listening import SpokenConversation
from agent.model import Conversations, SessionBusy, text_deltas
from agent.modes import RUNS, Turn
from agent.sagemaker_client import bidirectional_client
from agent.stt_session import STTSession
from agent.telemetry import TurnTelemetry, tracer_provider
from agent.tts_session import TTSSession
from agent.turn_taking import TurnTaking
from facts import AUDIO_FORMATS, BIDI, MODES
from host_guard import HostGuard, allowed_hosts
from tts.wire.sse import encode_event

log = logging.getLogger("agent.app")

MAX_PROMPT_CHARS = 4000
VOICES_TIMEOUT_S = 15.0
"""`GET /voices`: a session opened (OPEN_TIMEOUT_S at most) and one control message answered."""
MAX_PLAYED_MS = 86_400_000  # a day of audio: more is a client's mistake (and past a float for huge ints)
# The web page's icon (a sound wave), at the address browsers ask for; SVG, which they all take.
FAVICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="7" fill="#0060c7"/><g fill="#fff">'
    '<rect x="5" y="13" width="3" height="6" rx="1.5"/><rect x="10.5" y="8" width="3" height="16" rx="1.5"/>'
    '<rect x="16" y="4" width="3" height="24" rx="1.5"/>'
    '<rect x="21.5" y="10" width="3" height="12" rx="1.5"/>'
    "</g></svg>"
)


class PayloadError(TurnError):
    """A payload the turn cannot run; answered in-band with its code."""


def _text(payload: dict[str, Any], name: str, default: str, code: str) -> str:
    value = payload.get(name, default)
    if not isinstance(value, str):
        raise PayloadError(code, f"'{name}' must be a string, got {type(value).__name__}")
    return value


def parse_turn(payload: Any, config: AgentConfig) -> Turn:
    """The turn a payload asks for; every field's type and value is checked here, so nothing the
    client sends reaches the turn unchecked (an unhashable `mode` once ended the response unanswered)."""
    if not isinstance(payload, dict):
        raise PayloadError("invalid_payload", "the payload must be a JSON object")
    if "prompt" not in payload:
        raise PayloadError("missing_prompt", "'prompt' is required")
    prompt = _text(payload, "prompt", "", "invalid_prompt")
    if not prompt.strip():
        raise PayloadError("missing_prompt", "'prompt' must be a non-empty string")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise PayloadError(
            "prompt_too_long", f"'prompt' has {len(prompt)} characters; the limit is {MAX_PROMPT_CHARS}"
        )
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise PayloadError("invalid_prompt", "'prompt' holds a lone surrogate, which is not text") from None
    mode = _text(payload, "mode", BIDI, "invalid_mode")
    if mode not in MODES:
        raise PayloadError("invalid_mode", f"'mode' must be 'bidi' or 'batch', got {mode!r}")
    voice = _text(payload, "voice", config.tts_voice, "invalid_voice")
    if not voice:
        raise PayloadError("invalid_voice", "'voice' must be a non-empty string")
    audio_format = _text(payload, "format", config.tts_format, "invalid_format")
    if audio_format not in AUDIO_FORMATS:
        raise PayloadError(
            "invalid_format", f"'format' must be one of {', '.join(AUDIO_FORMATS)}, got {audio_format!r}"
        )
    return Turn(
        prompt=prompt,
        mode=mode,
        voice=voice,
        audio_format=audio_format,
        first_fragment_min_words=config.first_fragment_min_words,
        first_fragment_max_words=config.first_fragment_max_words,
    )


def parse_interrupt(payload: dict[str, Any]) -> float | None:
    """`interrupt.played_ms` (ms of the latest turn's audio the listener heard), or None without one."""
    if "interrupt" not in payload:
        return None
    value = payload["interrupt"]
    played_ms = value.get("played_ms") if isinstance(value, dict) else None
    if (
        isinstance(played_ms, bool)
        or not isinstance(played_ms, int | float)
        or not 0 <= played_ms <= MAX_PLAYED_MS
    ):
        raise PayloadError(
            "invalid_interrupt",
            f"'interrupt' must be {{\"played_ms\": a number of ms from 0 to {MAX_PLAYED_MS}}}",
        )
    return float(played_ms)


def parse_request(payload: Any, config: AgentConfig) -> tuple[Turn | None, float | None]:
    """The turn and the interrupt a payload asks for, all checked before either acts: an interrupt
    alone has no turn; anything else must be a valid turn."""
    if not isinstance(payload, dict):
        raise PayloadError("invalid_payload", "the payload must be a JSON object")
    played_ms = parse_interrupt(payload)
    if played_ms is not None and "prompt" not in payload:
        return None, played_ms
    return parse_turn(payload, config), played_ms


Handler = Callable[[Request], Awaitable[Response]]


def _parsed_first(handle: Handler) -> Handler:
    """The SDK's `/invocations`, with the body parsed first. The SDK answers a body that is not JSON
    with 400 but lets what Python's parser refuses in valid JSON escape as a bare 500: an integer of
    more than 4,300 digits (ValueError) or nesting deeper than the recursion limit (RecursionError).
    Those get the SDK's own 400; the parsed body is cached on the request, so the SDK reads it again
    for free."""

    async def invocations(request: Request) -> Response:
        try:
            await request.json()
        except (ValueError, RecursionError) as exc:
            detail = str(exc) if isinstance(exc, ValueError) else "the JSON is nested too deeply"
            return JSONResponse({"error": "Invalid JSON", "details": detail}, status_code=400)
        return await handle(request)

    return invocations


def _same_origin_only(handle: Handler) -> Handler:
    """`/invocations` for the agent's own page and for clients that are not browsers only
    (agent.browser_guard): another site's request is refused before its body is read."""

    async def invocations(request: Request) -> Response:
        return cross_origin_refusal(request) or await handle(request)

    return invocations


class Speech:
    """The endpoints' client, created once on the loop that runs the turns and reused by every turn
    and conversation (its HTTP/2 connection is shared; each session is one stream on it)."""

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._client = None

    async def _shared_client(self) -> Any:
        if self._client is None:
            self._client = await bidirectional_client(self._config)
        return self._client

    async def open_session(self) -> TTSSession:
        return await TTSSession.open(await self._shared_client(), self._config.tts_endpoint)

    async def open_listening(self) -> STTSession:
        return await STTSession.open(await self._shared_client(), self._config.stt_endpoint)


class VoiceAgent:
    """The agent's turns, over one conversation per runtime session and the shared speech client: a
    turn per `POST /invocations` (its events as SSE) and per final transcript of a spoken conversation
    (`WS /ws`)."""

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._conversations = Conversations(config)
        self._speech = Speech(config)
        self._provider = tracer_provider()
        backchannels = None if config.backchannels is None else frozenset(config.backchannels)
        self._turn_taking = TurnTaking(backchannels, config.preempt_complete, self._discard_turn)

    async def invoke(self, payload: Any, context: Any) -> StreamingResponse:
        """The SDK's entrypoint: the turn's events as Server-Sent Events."""
        return StreamingResponse(
            self._sse(payload, getattr(context, "session_id", None)), media_type="text/event-stream"
        )

    async def converse(self, websocket: WebSocket, context: Any) -> None:
        """The SDK's `/ws`: a spoken conversation, another site's refused."""
        if foreign_origin(websocket) is not None:
            await websocket.close(code=1008)  # before accept: the browser gets HTTP 403
            return
        session_id = getattr(context, "session_id", None)
        conversation = SpokenConversation(
            websocket,
            session_id,
            self.events,
            self._speech.open_listening,
            self._check_settings,
            self._turn_taking,
        )
        await conversation.run()

    async def _discard_turn(self, session_id: str) -> None:
        """A turn started before the user's turn was certain, and the user went on: its work is undone."""
        await self._conversations.for_session(session_id).discard()

    async def events(self, payload: Any, session_id: str | None) -> AsyncIterator[Event]:
        """One turn's events, observed into its telemetry (spans and EMF line)."""
        telemetry = TurnTelemetry(self._provider)
        try:
            async for event in self._turn_events(payload, session_id):
                telemetry.observe(event)
                yield event
        finally:
            telemetry.end()

    async def _sse(self, payload: Any, session_id: str | None) -> AsyncIterator[bytes]:
        async for event in self.events(payload, session_id):
            yield encode_event(event)

    async def voices(self, request: Request) -> Response:
        """`GET /voices`: the TTS endpoint's voices, for the page's voice picker, asked of the endpoint
        itself (so a model directory's own voices are there too); 502 when it cannot say (no endpoint, a
        refused session, a timeout: the page keeps its default)."""
        try:
            async with asyncio.timeout(VOICES_TIMEOUT_S), await self._speech.open_session() as session:
                listed = await session.voices()
        except EndpointStreamError as exc:  # the endpoint's own typed answer (no endpoint, refused)
            reason = str(exc)
        except TimeoutError:
            reason = f"no answer in {VOICES_TIMEOUT_S:.0f} s"
        except Exception:  # anything else is ours: logged, and not shown to the page
            log.exception("GET /voices failed")
            reason = "the endpoint could not be asked"
        else:
            return JSONResponse(listed, headers=NOSNIFF)
        return JSONResponse({"error": f"the voice list is not available ({reason})"}, status_code=502)

    def _check_settings(self, settings: dict[str, Any]) -> None:
        parse_turn({**settings, "prompt": "settings"}, self._config)

    async def _turn_events(self, payload: Any, session_id: str | None) -> AsyncIterator[Event]:
        clock = EventClock()
        # The interrupt's event goes out only once this turn has started (or been refused): a yield
        # between the interrupt and `start_turn` let a turn sent at the same moment on the same session
        # start in between, unheard and uninterrupted, and this one was refused as session_busy.
        notice: Event | None = None
        try:
            turn, played_ms = parse_request(payload, self._config)
            conversation = self._conversations.for_session(session_id)
            if played_ms is not None:
                notice = interrupted(clock, played_ms, await conversation.interrupt(played_ms))
                if turn is None:
                    yield notice
                    yield agent_end(clock, ok=True)
                    return
            if conversation.busy():
                raise SessionBusy()
        except TurnError as exc:
            if notice is not None:
                yield notice
            yield error(clock, exc.code, str(exc))
            yield agent_end(clock, ok=False)
            return
        spoken = conversation.start_turn()
        try:
            if notice is not None:
                yield notice
            async for event in RUNS[turn.mode](
                turn,
                lambda prompt: text_deltas(conversation.agent, prompt),
                self._speech.open_session,
                spoken,
            ):
                yield event
        finally:
            spoken.ended.set()


class WebPage:
    """The page (`agent/web/index.html`, its CSP by hash), its capture script and its icon, read once."""

    def __init__(self) -> None:
        web = resources.files("agent") / "web"
        self._html = (web / "index.html").read_text(encoding="utf-8")
        self._headers = page_headers(self._html)
        self._capture_js = (web / "capture.js").read_text(encoding="utf-8")

    async def page(self, request: Request) -> HTMLResponse:
        return HTMLResponse(self._html, headers=self._headers)

    async def favicon(self, request: Request) -> Response:
        return Response(FAVICON_SVG, media_type="image/svg+xml", headers=NOSNIFF)

    async def capture(self, request: Request) -> Response:
        return Response(self._capture_js, media_type="text/javascript", headers=NOSNIFF)

    def routes(self) -> list[Route]:
        return [
            Route("/", self.page, methods=["GET"]),
            Route("/favicon.ico", self.favicon, methods=["GET"]),
            Route("/capture.js", self.capture, methods=["GET"]),
        ]


def _guarded_invocations(routes: list) -> None:
    """The SDK's `/invocations` route, replaced by the same endpoint behind `_same_origin_only` and
    `_parsed_first`."""
    at = next(i for i, route in enumerate(routes) if getattr(route, "path", None) == "/invocations")
    routes[at] = Route(
        "/invocations", _same_origin_only(_parsed_first(routes[at].endpoint)), methods=["POST"]
    )


def create_app(config: AgentConfig | None = None) -> BedrockAgentCoreApp:
    """The SDK's app (`/invocations`, `/ping`, `/ws`) over the agent's turns, `/invocations` guarded,
    the page's routes added, and every request's `Host` checked (agent.browser_guard)."""
    config = config or AgentConfig.from_env()
    app = BedrockAgentCoreApp()
    agent = VoiceAgent(config)
    app.entrypoint(agent.invoke)
    app.websocket(agent.converse)
    _guarded_invocations(app.router.routes)
    app.router.routes.extend(WebPage().routes())
    app.router.routes.append(Route("/voices", agent.voices, methods=["GET"]))
    app.add_middleware(
        HostGuard, allowed=allowed_hosts(config.host, config.allowed_hosts), refusal=host_refusal
    )
    return app
