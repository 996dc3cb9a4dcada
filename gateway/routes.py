"""OpenAI's routes over SageMaker endpoints: `POST /v1/audio/speech`, `GET /v1/audio/voices`,
`GET /v1/models`, and Kokoro-FastAPI's `POST /dev/captioned_speech` (the same routes, answered the
same way, as the emulator's, emulator/openai_routes.py).

What is refused before the endpoint (`model`, the body's shape) is `gateway/front.py`'s; the body goes
to the endpoint unchanged: the container reads OpenAI's body itself and answers in OpenAI's shapes.
boto3 is synchronous, so each call and each streamed part runs in a worker thread, never on the event
loop.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.front import (
    OPENAI_MODELS,
    VOICES_REQUEST,
    OpenAIRefusal,
    captioned_request,
    endpoint_for,
    model_list,
    speech_body,
)
from gateway.sagemaker import Answer, SageMakerEndpoints, openai_error


def _respond(answer: Answer) -> Response:
    return StreamingResponse(
        iterate_in_threadpool(answer.chunks), answer.status, media_type=answer.content_type
    )


def create_app(endpoints: list[str], sagemaker: SageMakerEndpoints) -> Starlette:
    async def speech(request: Request) -> Response:
        try:
            raw = await request.body()
            name = endpoint_for(speech_body(raw).get("model"), endpoints)
        except OpenAIRefusal as refusal:
            return _respond(openai_error(refusal))
        return _respond(await run_in_threadpool(sagemaker.stream, name, raw))

    async def captioned_speech(request: Request) -> Response:
        try:
            body = speech_body(await request.body())
            name = endpoint_for(body.get("model"), endpoints)
        except OpenAIRefusal as refusal:
            return _respond(openai_error(refusal))
        return _respond(await run_in_threadpool(sagemaker.invoke, name, captioned_request(body)))

    async def voices(request: Request) -> Response:
        try:
            name = endpoint_for(request.query_params.get("model", OPENAI_MODELS[0]), endpoints)
        except OpenAIRefusal as refusal:
            return _respond(openai_error(refusal))
        return _respond(await run_in_threadpool(sagemaker.invoke, name, VOICES_REQUEST))

    async def models(request: Request) -> Response:
        return JSONResponse(model_list(endpoints, "sagemaker"))

    return Starlette(
        routes=[
            Route("/v1/audio/speech", speech, methods=["POST"]),
            Route("/dev/captioned_speech", captioned_speech, methods=["POST"]),
            Route("/v1/audio/voices", voices, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
        ]
    )
