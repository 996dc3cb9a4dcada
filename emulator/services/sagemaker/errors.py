"""SageMaker's errors: the control plane's `ValidationException` (bad input, unknown resources), and the
runtime's for what the container or the routing did, shared by the routes that forward to a container
(InvokeEndpoint, the response stream, the bidirectional stream). The envelope itself is the one in
emulator.wire.awserrors."""

from __future__ import annotations

from emulator.config import EmulatorConfig
from emulator.controller.routing import Route, RoutingError
from emulator.wire.awserrors import AwsError


def validation(message: str) -> AwsError:
    """The control plane's error for bad input and unknown resources."""
    return AwsError("ValidationException", message)


def input_error(message: str) -> AwsError:
    """The bidirectional stream's refusal before it opens (a bad name, path, query or image)."""
    return AwsError("InputValidationError", message, 400, ErrorCode="InputValidationError")


def log_stream_arn(config: EmulatorConfig, route: Route) -> str:
    return (
        f"arn:aws:logs:{config.region}:{config.account_id}:log-group:/aws/sagemaker/Endpoints/"
        f"{route.endpoint.name}:log-stream:{route.deployed.variant.name}/{route.replica.id}"
    )


def model_error(config: EmulatorConfig, route: Route, status: int, text: str) -> AwsError:
    """SageMaker's 424 for a container that answered an error (or nothing: status 0)."""
    kind = "client" if 400 <= status < 500 else "server"
    logs = (
        f"https://{config.region}.console.aws.amazon.com/cloudwatch/home?region={config.region}"
        f"#logEventViewer:group=/aws/sagemaker/Endpoints/{route.endpoint.name} in account {config.account_id}"
    )
    return AwsError(
        "ModelError",
        f'Received {kind} error ({status}) from primary with message "{text}". '
        f"See {logs} for more information. "
        f"(emulator log: {route.replica.log_path})",
        424,
        OriginalStatusCode=status,
        OriginalMessage=text,
        LogStreamArn=log_stream_arn(config, route),
    )


def routing_error(err: RoutingError) -> AwsError:
    if err.kind == "no_replica":
        return AwsError("ServiceUnavailable", err.message, 503)
    return AwsError("ValidationError", err.message, 400)
