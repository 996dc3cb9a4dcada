"""OpenAI's audio routes in front of the emulator's endpoints, on its HTTP port: `POST /v1/audio/speech`,
`GET /v1/audio/voices`, `GET /v1/models`, and Kokoro-FastAPI's `POST /dev/captioned_speech`.

Not an AWS API (so not under services/, and never SigV4-signed: OpenAI's clients send a bearer
token, which is not checked), and no vocabulary of its own: `model` names the endpoint
(`tts-1` / `tts-1-hd`, OpenAI's names, mean the only endpoint when there is exactly one), and the body
goes unchanged through the path every invocation takes (`services/sagemaker/runtime.py`'s
`open_invocation`: payload limit, a replica, a lease) to the container, which reads OpenAI's body and
answers it in OpenAI's shapes, errors included (`tts/wire/openai_speech.py`). The container's answer
comes back as it streams, with its own status: a client that speaks OpenAI sees what OpenAI would
answer, not SageMaker's 424 wrapper. Its counterpart on AWS is `python -m gateway`; both refuse what
needs no container through `gateway/front.py`.

What only this side can refuse is refused in OpenAI's envelope too: a body that is not JSON (400), a
`model` that names no endpoint (404 `model_not_found`), no replica ready (503).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
from quart import Blueprint, Response, request

from emulator.config import EmulatorConfig
from emulator.controller.routing import Router
from emulator.services.sagemaker.runtime import open_invocation
from emulator.wire.auth import unsigned
from emulator.wire.awserrors import AwsError
from gateway.front import (
    OPENAI_MODELS,
    VOICES_REQUEST,
    OpenAIRefusal,
    captioned_request,
    endpoint_for,
    model_list,
    speech_body,
)

JSON = "application/json"


def openai_blueprint(config: EmulatorConfig, router: Router, http: httpx.AsyncClient) -> Blueprint:
    bp = Blueprint("openai", __name__)

    @bp.errorhandler(OpenAIRefusal)
    async def openai_error(refusal: OpenAIRefusal) -> Response:
        return Response(refusal.body(), status=refusal.status, content_type=JSON)

    def endpoints() -> list[str]:
        return sorted(name for name, ep in router.store.endpoints.items() if ep.status == "InService")

    async def forward(model: object, body: bytes) -> Response:
        name = endpoint_for(model, endpoints())
        try:
            invocation = await open_invocation(config, router, http, name, body, {"Content-Type": JSON})
        except AwsError as err:
            raise OpenAIRefusal(err.status if err.status < 500 else 503, err.message, err.code) from err
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

    @bp.post("/v1/audio/speech")
    @unsigned
    async def speech() -> Response:
        raw = await request.get_data()
        return await forward(speech_body(raw).get("model"), raw)

    @bp.post("/dev/captioned_speech")
    @unsigned
    async def captioned_speech() -> Response:
        body = speech_body(await request.get_data())
        return await forward(body.get("model"), captioned_request(body))

    @bp.get("/v1/audio/voices")
    @unsigned
    async def voices() -> Response:
        return await forward(request.args.get("model", OPENAI_MODELS[0]), VOICES_REQUEST)

    @bp.get("/v1/models")
    @unsigned
    async def models() -> Response:
        return Response(json.dumps(model_list(endpoints(), "emulator")), content_type=JSON)

    return bp
