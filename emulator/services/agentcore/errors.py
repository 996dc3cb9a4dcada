"""Bedrock AgentCore's errors, as the service models them: restJson1 with the code in `x-amzn-ErrorType`
and a lower-case `message` in the body; `ValidationException` with `reason` and `fieldList`."""

from __future__ import annotations

from quart import Response

from emulator.wire.awserrors import AwsError, rest_json_error


def agentcore_error(err: AwsError) -> Response:
    """AgentCore's error bodies carry a lower-case `message`."""
    return rest_json_error(err, message_member="message")


def field_error(name: str, message: str) -> AwsError:
    """AgentCore's ValidationException: `message`, `reason` and the offending field."""
    return AwsError(
        "ValidationException",
        f"1 validation error detected: {message}",
        400,
        reason="FieldValidationFailed",
        fieldList=[{"name": name, "message": message}],
    )


def architecture_incompatible(uri: str, architecture: str) -> AwsError:
    """CreateAgentRuntime/UpdateAgentRuntime for an image of another CPU. AWS's text, as deployers quote
    it (public troubleshooting notes of AgentCore projects; AWS's own guide only says the container
    must be ARM64): `ValidationException: Architecture incompatible for uri '<uri>'. Supported
    architectures: [arm64]`."""
    return AwsError(
        "ValidationException",
        f"Architecture incompatible for uri '{uri}'. Supported architectures: [{architecture.lower()}]",
        400,
    )


def not_found(message: str) -> AwsError:
    return AwsError("ResourceNotFoundException", message, 404)


def conflict(message: str) -> AwsError:
    return AwsError("ConflictException", message, 409)


def access_denied(account_id: str, resource: str) -> AwsError:
    return AwsError(
        "AccessDeniedException",
        f"User: arn:aws:iam::{account_id}:user/emulator is not authorized to perform: "
        f"bedrock-agentcore:InvokeAgentRuntime on resource: {resource}",
        403,
    )


def runtime_client_error(message: str) -> AwsError:
    return AwsError("RuntimeClientError", message, 424)
