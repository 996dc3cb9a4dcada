"""The AgentCore app: `POST /invocations` with `{"prompt", "mode"?, "voice"?, "format"?}` streams the
turn's events as Server-Sent Events; `GET /ping` is AgentCore's health check; `GET /` is the web page.

The entrypoint returns its own `StreamingResponse` (which the SDK passes through) instead of yielding
dicts for the SDK to stream: the SDK bridges a generator through a worker thread and, when the client
goes away, abandons it without closing it, so the turn would keep its TTS session open and the
endpoint would keep computing audio nobody hears. Here the turn's generator is the response body:
a disconnect cancels it, and the turn cancels its speech (barge-in). Payload errors are answered
in-band with a typed `error` event and `agent_end`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.requests import Request
from starlette.responses import HTMLResponse, StreamingResponse
from starlette.routing import Route

from agent.config import AgentConfig
from agent.events import Event, EventClock, agent_end, error
from agent.model import Conversations, text_deltas
from agent.modes import MODES, Turn
from agent.sagemaker_client import bidirectional_client
from agent.tts_session import TTSSession
from tts.sse import encode_event

AUDIO_FORMATS = ("pcm", "wav", "mp3", "aac", "opus")
MAX_PROMPT_CHARS = 4000


class PayloadError(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def parse_turn(payload: Any, config: AgentConfig) -> Turn:
    if not isinstance(payload, dict):
        raise PayloadError("invalid_payload", "the payload must be a JSON object")
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise PayloadError("missing_prompt", "'prompt' must be a non-empty string")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise PayloadError(
            "prompt_too_long", f"'prompt' has {len(prompt)} characters; the limit is {MAX_PROMPT_CHARS}"
        )
    mode = payload.get("mode", "bidi")
    if mode not in MODES:
        raise PayloadError("invalid_mode", f"'mode' must be 'bidi' or 'batch', got {mode!r}")
    voice = payload.get("voice", config.tts_voice)
    if not isinstance(voice, str) or not voice:
        raise PayloadError("invalid_voice", "'voice' must be a non-empty string")
    audio_format = payload.get("format", config.tts_format)
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
    )


class Speech:
    """The endpoint's client, created once on the loop that runs the turns and reused by every turn
    (its HTTP/2 connection is shared; each turn is one stream on it)."""

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._client = None

    async def open_session(self) -> TTSSession:
        if self._client is None:
            self._client = await bidirectional_client(self._config)
        return await TTSSession.open(self._client, self._config.tts_endpoint)


def create_app(config: AgentConfig | None = None) -> BedrockAgentCoreApp:
    config = config or AgentConfig.from_env()
    app = BedrockAgentCoreApp()
    conversations = Conversations(config)
    speech = Speech(config)

    async def events(payload: Any, session_id: str | None) -> AsyncIterator[Event]:
        try:
            turn = parse_turn(payload, config)
        except PayloadError as exc:
            clock = EventClock()
            yield error(clock, exc.code, str(exc))
            yield agent_end(clock, ok=False)
            return
        agent = conversations.for_session(session_id)
        async for event in MODES[turn.mode](
            turn, lambda prompt: text_deltas(agent, prompt), speech.open_session
        ):
            yield event

    async def sse(payload: Any, session_id: str | None) -> AsyncIterator[bytes]:
        async for event in events(payload, session_id):
            yield encode_event(event)

    @app.entrypoint
    async def invoke(payload: Any, context: Any) -> StreamingResponse:
        return StreamingResponse(
            sse(payload, getattr(context, "session_id", None)), media_type="text/event-stream"
        )

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse((resources.files("agent") / "web" / "index.html").read_text(encoding="utf-8"))

    app.router.routes.append(Route("/", page, methods=["GET"]))
    return app
