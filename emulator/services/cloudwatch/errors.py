"""CloudWatch's errors. botocore speaks CloudWatch's JSON protocol (the model lists `smithy-rpc-v2-cbor`,
`json` and `query`; botocore 1.44 picks `json`, the first it supports in its priority order), with the
awsQuery-compatible codes the service has always answered: `InvalidParameterValue`,
`MissingParameter`, `ResourceNotFound`, `InvalidParameterCombination`."""

from __future__ import annotations

from emulator.wire.awserrors import AwsError


def invalid(message: str) -> AwsError:
    return AwsError("InvalidParameterValue", message)


def missing(member: str) -> AwsError:
    return AwsError("MissingParameter", f"The parameter {member} is required.")


def combination(message: str) -> AwsError:
    return AwsError("InvalidParameterCombination", message)


def no_dashboard(name: str) -> AwsError:
    return AwsError("ResourceNotFound", f"Dashboard {name} does not exist", 404)


def not_emulated(what: str) -> AwsError:
    return AwsError("InvalidParameterValue", f"{what} is not emulated")


def no_alarm(name: str) -> AwsError:
    return AwsError("ResourceNotFound", f"Alarm {name} does not exist", 404)


def bad_token() -> AwsError:
    return AwsError(
        "InvalidNextToken", "The service cannot find the token: it is not one GetMetricData gave."
    )
