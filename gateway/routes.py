"""OpenAI's routes over SageMaker endpoints: `POST /v1/audio/speech`, `GET /v1/audio/voices`,
`GET /v1/models`, and Kokoro-FastAPI's `POST /dev/captioned_speech` (the same routes, answered the
same way, as the emulator's, emulator/openai_routes.py).

`model` names an endpoint the gateway was given; `tts-1` / `tts-1-hd` mean the only one when there is
exactly one. The body goes to the endpoint unchanged: the container reads OpenAI's body itself and
answers in OpenAI's shapes. boto3 is synchronous, so each call and each streamed part runs in a
worker thread, never on the event loop.
"""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.sagemaker import Answer, SageMakerEndpoints, openai_error

OPENAI_MODELS = ("tts-1", "tts-1-hd")
VOICES_REQUEST = b'{"type": "voices"}'
MAX_BODY_BYTES = 6 * 1024 * 1024  # SageMaker's own payload limit for InvokeEndpoint


class Refused(Exception):
    def __init__(self, answer: Answer) -> None:
        self.answer = answer


def _respond(answer: Answer) -> Response:
    return StreamingResponse(
        iterate_in_threadpool(answer.chunks), answer.status, media_type=answer.content_type
    )


def create_app(endpoints: list[str], sagemaker: SageMakerEndpoints) -> Starlette:
    def endpoint_for(model: object) -> str:
        if model in OPENAI_MODELS and len(endpoints) == 1:
            return endpoints[0]
        if isinstance(model, str) and model in endpoints:
            return model
        message = f"The model {model!r:.80} does not exist; the endpoints are {', '.join(endpoints)}"
        raise Refused(openai_error(404, message, "model_not_found", "model"))

    async def speech_body(request: Request) -> tuple[bytes, dict[str, Any]]:
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            raise Refused(openai_error(413, f"the body is over {MAX_BODY_BYTES} bytes", "body_too_large"))
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            raise Refused(openai_error(400, "The body is not JSON", "invalid_json")) from None
        if not isinstance(body, dict):
            raise Refused(openai_error(400, "The body must be a JSON object", "not_an_object"))
        if "input" not in body:
            raise Refused(openai_error(400, "you must provide an input", "missing_text", "input"))
        return raw, body

    async def speech(request: Request) -> Response:
        try:
            raw, body = await speech_body(request)
            name = endpoint_for(body.get("model"))
        except Refused as refused:
            return _respond(refused.answer)
        return _respond(await run_in_threadpool(sagemaker.stream, name, raw))

    async def captioned_speech(request: Request) -> Response:
        try:
            _, body = await speech_body(request)
            name = endpoint_for(body.get("model"))
        except Refused as refused:
            return _respond(refused.answer)
        raw = json.dumps({**body, "return_timestamps": True}).encode()
        return _respond(await run_in_threadpool(sagemaker.invoke, name, raw))

    async def voices(request: Request) -> Response:
        try:
            name = endpoint_for(request.query_params.get("model", OPENAI_MODELS[0]))
        except Refused as refused:
            return _respond(refused.answer)
        return _respond(await run_in_threadpool(sagemaker.invoke, name, VOICES_REQUEST))

    async def models(request: Request) -> Response:
        ids = [*endpoints, *(OPENAI_MODELS if len(endpoints) == 1 else ())]
        created = int(time.time())
        data = [{"id": i, "object": "model", "created": created, "owned_by": "sagemaker"} for i in ids]
        return JSONResponse({"object": "list", "data": data})

    return Starlette(
        routes=[
            Route("/v1/audio/speech", speech, methods=["POST"]),
            Route("/dev/captioned_speech", captioned_speech, methods=["POST"]),
            Route("/v1/audio/voices", voices, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
        ]
    )
