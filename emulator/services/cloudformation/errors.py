"""CloudFormation's errors: awsQuery's XML `ErrorResponse` in CloudFormation's namespace; bad input and a
stack that does not exist are `ValidationError` (what boto3's stack waiters read), a second stack of a
live name is `AlreadyExistsException`."""

from __future__ import annotations

from emulator.wire.awserrors import AwsError

NAMESPACE = "http://cloudformation.amazonaws.com/doc/2010-05-15/"


def validation(message: str) -> AwsError:
    return AwsError("ValidationError", message)


def no_such_stack(name: str) -> AwsError:
    return validation(f"Stack with id {name} does not exist")


def already_exists(name: str) -> AwsError:
    return AwsError("AlreadyExistsException", f"Stack [{name}] already exists")
