"""OpenAI's audio routes in front of the emulator's endpoints, on its HTTP port: `POST /v1/audio/speech`,
`GET /v1/audio/voices`, `GET /v1/models`, and Kokoro-FastAPI's `POST /dev/captioned_speech`.

Not an AWS API (so not under services/, and never SigV4-signed: OpenAI's clients send a bearer
token, which is not checked), and no vocabulary of its own: `model` names the endpoint
(`tts-1` / `tts-1-hd`, OpenAI's names, mean the only endpoint when there is exactly one), and the body
goes unchanged through the path every invocation takes (`services/sagemaker/runtime.py`'s
`open_invocation`: payload limit, a replica, a lease) to the container, which reads OpenAI's body and
answers it in OpenAI's shapes, errors included (`tts/wire/openai_speech.py`). The container's answer
comes back as it streams, with its own status: a client that speaks OpenAI sees what OpenAI would
answer, not SageMaker's 424 wrapper. `python -m tts.gateway`'s counterpart on AWS is `gateway/`.

What only this side can refuse is refused in OpenAI's envelope too: a body that is not JSON (400), a
`model` that names no endpoint (404 `model_not_found`), no replica ready (503).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from quart import Blueprint, Response, request

from emulator.config import EmulatorConfig
from emulator.controller.routing import Router
from emulator.services.sagemaker.runtime import open_invocation
from emulator.wire.auth import unsigned
from emulator.wire.awserrors import AwsError

OPENAI_MODELS = ("tts-1", "tts-1-hd")
"""OpenAI's speech model names: the only endpoint, when there is exactly one."""
VOICES_REQUEST = b'{"type": "voices"}'


class OpenAIError(Exception):
    def __init__(self, status: int, message: str, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param

    def response(self) -> Response:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        body = {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}
        return Response(json.dumps(body), status=self.status, content_type="application/json")


def openai_blueprint(config: EmulatorConfig, router: Router, http: httpx.AsyncClient) -> Blueprint:
    bp = Blueprint("openai", __name__)

    @bp.errorhandler(OpenAIError)
    async def openai_error(err: OpenAIError) -> Response:
        return err.response()

    def endpoints() -> list[str]:
        return sorted(name for name, ep in router.store.endpoints.items() if ep.status == "InService")

    def endpoint_for(model: object) -> str:
        names = endpoints()
        if model in OPENAI_MODELS and len(names) == 1:
            return names[0]
        if isinstance(model, str) and model in names:
            return model
        hint = f"; the endpoints are {', '.join(names)}" if names else "; no endpoint is in service"
        raise OpenAIError(404, f"The model {model!r:.80} does not exist{hint}", "model_not_found", "model")

    async def forward(model: object, body: bytes) -> Response:
        name = endpoint_for(model)
        try:
            invocation = await open_invocation(
                config, router, http, name, body, {"Content-Type": "application/json"}
            )
        except AwsError as err:
            raise OpenAIError(err.status if err.status < 500 else 503, err.message, err.code) from err
        upstream = invocation.upstream

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            finally:
                await invocation.close()

        return Response(
            chunks(),
            status=upstream.status_code,
            content_type=upstream.headers.get("Content-Type", "application/octet-stream"),
        )

    async def speech_body() -> dict[str, Any]:
        try:
            body = json.loads(await request.get_data())
        except (ValueError, RecursionError):
            raise OpenAIError(400, "The body is not JSON", "invalid_json") from None
        if not isinstance(body, dict):
            raise OpenAIError(400, "The body must be a JSON object", "not_an_object")
        if "input" not in body:
            raise OpenAIError(400, "you must provide an input", "missing_text", "input")
        return body

    @bp.post("/v1/audio/speech")
    @unsigned
    async def speech() -> Response:
        body = await speech_body()
        return await forward(body.get("model"), await request.get_data())

    @bp.post("/dev/captioned_speech")
    @unsigned
    async def captioned_speech() -> Response:
        body = await speech_body()
        return await forward(body.get("model"), json.dumps({**body, "return_timestamps": True}).encode())

    @bp.get("/v1/audio/voices")
    @unsigned
    async def voices() -> Response:
        return await forward(request.args.get("model", OPENAI_MODELS[0]), VOICES_REQUEST)

    @bp.get("/v1/models")
    @unsigned
    async def models() -> Response:
        names = endpoints()
        ids = [*names, *(OPENAI_MODELS if len(names) == 1 else ())]
        created = int(time.time())
        data = [{"id": i, "object": "model", "created": created, "owned_by": "emulator"} for i in ids]
        return Response(json.dumps({"object": "list", "data": data}), content_type="application/json")

    return bp
