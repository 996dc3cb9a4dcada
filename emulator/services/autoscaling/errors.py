"""Application Auto Scaling's errors (awsJson1.1 `__type`): `ValidationException` for bad input and
`ObjectNotFoundException` for a target or policy that is not registered."""

from __future__ import annotations

from emulator.wire.awserrors import AwsError


def validation(message: str) -> AwsError:
    return AwsError("ValidationException", message)


def not_found(message: str) -> AwsError:
    return AwsError("ObjectNotFoundException", message)


def invalid_next_token() -> AwsError:
    return AwsError("InvalidNextTokenException", "The next token supplied was invalid.")


def no_target(key: tuple[str, str, str]) -> str:
    return (
        f"No scalable target registered for service namespace: {key[0]}, resource ID: {key[1]}, "
        f"scalable dimension: {key[2]}"
    )
