"""The endpoint's side: InvokeEndpoint and InvokeEndpointWithResponseStream through boto3 (the caller's
credentials, SigV4; `AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME` points it at the emulator unchanged).

A container's error reaches boto3 as SageMaker's 424 `ModelError`; its `OriginalStatusCode` and
`OriginalMessage` are the container's own answer (for an OpenAI body, OpenAI's error envelope:
`tts/wire/openai_speech.py`), which is what an OpenAI client must see, so `Answer` carries them
unwrapped. Any other AWS error becomes an OpenAI-shaped error with the AWS code.
"""

from __future__ import annotations

from collections.abc import Iterator
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


def openai_error(refusal: OpenAIRefusal) -> Answer:
    return Answer(refusal.status, JSON, iter([refusal.body()]))


def _refused(err: ClientError) -> Answer:
    response: dict[str, Any] = err.response
    original = response.get("OriginalStatusCode")
    if response.get("Error", {}).get("Code") == "ModelError" and isinstance(original, int) and original > 0:
        return Answer(original, JSON, iter([str(response.get("OriginalMessage", "")).encode()]))
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500)
    error = response.get("Error", {})
    return openai_error(
        OpenAIRefusal(
            status if status < 500 else 502,
            str(error.get("Message", err)),
            str(error.get("Code", "aws_error")),
        )
    )


class SageMakerEndpoints:
    def __init__(self, region: str | None = None) -> None:
        self._client = boto3.client("sagemaker-runtime", region_name=region)

    def invoke(self, endpoint: str, body: bytes) -> Answer:
        """InvokeEndpoint: the whole answer at once (the voice list, captions)."""
        try:
            response = self._client.invoke_endpoint(EndpointName=endpoint, Body=body, ContentType=JSON)
        except ClientError as err:
            return _refused(err)
        except BotoCoreError as err:
            return openai_error(
                OpenAIRefusal(502, f"could not reach the endpoint: {err}", "endpoint_unreachable")
            )
        return Answer(200, response.get("ContentType", JSON), iter([response["Body"].read()]))

    def stream(self, endpoint: str, body: bytes) -> Answer:
        """InvokeEndpointWithResponseStream: the audio as the container makes it."""
        try:
            response = self._client.invoke_endpoint_with_response_stream(
                EndpointName=endpoint, Body=body, ContentType=JSON
            )
        except ClientError as err:
            return _refused(err)
        except BotoCoreError as err:
            return openai_error(
                OpenAIRefusal(502, f"could not reach the endpoint: {err}", "endpoint_unreachable")
            )

        def parts() -> Iterator[bytes]:
            for event in response["Body"]:
                if "PayloadPart" in event:
                    yield event["PayloadPart"]["Bytes"]

        return Answer(200, response.get("ContentType", "application/octet-stream"), parts())
