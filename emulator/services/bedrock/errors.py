"""Bedrock Runtime's errors: restJson1 with the code in `x-amzn-errortype` and a lower-case `message`;
a malformed request or an unknown model ID is 400 `ValidationException`, an ARN that names no model
404 `ResourceNotFoundException`, a failing model 424 `ModelErrorException` (with the
model server's `originalStatusCode` when it answered one), an unexpected fault 500
`InternalServerException`."""

from __future__ import annotations

from quart import Response

from emulator.llm.base import ReplyModelError
from emulator.wire.awserrors import AwsError, rest_json_error


def bedrock_error(error: AwsError) -> Response:
    return rest_json_error(error, message_member="message")


def invalid(message: str) -> AwsError:
    return AwsError("ValidationException", message, 400)


def not_found(message: str) -> AwsError:
    return AwsError("ResourceNotFoundException", message, 404)


def model_error(exc: ReplyModelError) -> AwsError:
    return AwsError(
        "ModelErrorException", str(exc), 424, **({"originalStatusCode": exc.status} if exc.status else {})
    )


def internal_error(exc: Exception) -> AwsError:
    return AwsError("InternalServerException", f"the reply model failed: {exc!r}", 500)
