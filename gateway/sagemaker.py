"""The endpoint's side: InvokeEndpoint and InvokeEndpointWithResponseStream through boto3 (the caller's
credentials, SigV4; `AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME` points it at the emulator unchanged).

A container's error reaches boto3 as SageMaker's 424 `ModelError`; its `OriginalStatusCode` and
`OriginalMessage` are the container's own answer (for an OpenAI body, OpenAI's error envelope:
`tts/wire/openai_speech.py`), which is what an OpenAI client must see, so `Answer` carries them
unwrapped. Any other AWS error is refused as an OpenAI-shaped error with the AWS code (`OpenAIRefusal`,
which the routes answer), an endpoint that cannot be reached as a 502 `endpoint_unreachable`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from gateway.front import OpenAIRefusal

JSON = "application/json"


@dataclass
class Answer:
    status: int
    content_type: str
    chunks: Iterator[bytes]
    """The body, as the endpoint streams it (a whole body is one chunk)."""
    close: Callable[[], None] = lambda: None
    """Ends the endpoint's stream: for a client that went away before the end."""


def _container_answer(err: ClientError) -> Answer:
    """The container's own refusal inside SageMaker's ModelError; any other AWS error refused."""
    response: dict[str, Any] = err.response
    original = response.get("OriginalStatusCode")
    if response.get("Error", {}).get("Code") == "ModelError" and isinstance(original, int) and original > 0:
        return Answer(original, JSON, iter([str(response.get("OriginalMessage", "")).encode()]))
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500)
    error = response.get("Error", {})
    raise OpenAIRefusal(
        status if status < 500 else 502, str(error.get("Message", err)), str(error.get("Code", "aws_error"))
    ) from err


def _unreachable(err: BotoCoreError) -> OpenAIRefusal:
    return OpenAIRefusal(502, f"could not reach the endpoint: {err}", "endpoint_unreachable")


class SageMakerEndpoints:
    def __init__(self, region: str | None = None) -> None:
        self._client = boto3.client("sagemaker-runtime", region_name=region)

    def invoke(self, endpoint: str, body: bytes) -> Answer:
        """InvokeEndpoint: the whole answer at once (the voice list, captions)."""
        try:
            response = self._client.invoke_endpoint(EndpointName=endpoint, Body=body, ContentType=JSON)
        except ClientError as err:
            return _container_answer(err)
        except BotoCoreError as err:
            raise _unreachable(err) from err
        return Answer(200, response.get("ContentType", JSON), iter([response["Body"].read()]))

    def stream(self, endpoint: str, body: bytes) -> Answer:
        """InvokeEndpointWithResponseStream: the audio as the container makes it."""
        try:
            response = self._client.invoke_endpoint_with_response_stream(
                EndpointName=endpoint, Body=body, ContentType=JSON
            )
        except ClientError as err:
            return _container_answer(err)
        except BotoCoreError as err:
            raise _unreachable(err) from err
        events = response["Body"]

        def parts() -> Iterator[bytes]:
            with contextlib.closing(events):
                for event in events:
                    if "PayloadPart" in event:
                        yield event["PayloadPart"]["Bytes"]

        return Answer(200, response.get("ContentType", "application/octet-stream"), parts(), events.close)
