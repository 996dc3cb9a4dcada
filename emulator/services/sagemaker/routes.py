"""SageMaker's routes: the control plane's operations under awsJson1.1's `POST /` (target prefix
`SageMaker`), the runtime's `/endpoints/<name>/invocations` and `.../invocations-response-stream`
(restJson1, HTTP/1.1) and the bidirectional stream's `.../invocations-bidirectional-stream` (HTTP/2),
each answering errors in SageMaker's restJson1 envelope (`Message`)."""

from __future__ import annotations

from collections.abc import Mapping

import httpx
from quart import Blueprint

from emulator.config import EmulatorConfig
from emulator.controller.routing import Router
from emulator.controller.runtimes import Runtime
from emulator.services.sagemaker.bidirectional import bidirectional_handlers
from emulator.services.sagemaker.control import SageMakerControl
from emulator.services.sagemaker.runtime import runtime_handlers
from emulator.wire.awserrors import rest_json_error
from emulator.wire.awsjson import Operation
from emulator.wire.validation import ServiceModel
from emulator.wire.views import View, views_blueprint

TARGET_PREFIX = "SageMaker"
LOCAL_PATH = r"(?![a-zA-Z][a-zA-Z0-9+.-]*://).+|file://.+"
"""Model data as a local directory, a `.tar.gz` or a `file://` URL (emulator/controller/modeldata.py:
S3 cannot be reached), besides the model's `(https|s3)://...`."""
SERVICE_MODEL = ServiceModel("sagemaker", widened={"Url": LOCAL_PATH, "S3ModelUri": LOCAL_PATH})
"""botocore's model checks every control-plane request (emulator.wire.validation), model data widened."""
RUNTIME_VIEWS = (
    View("POST", "/endpoints/<name>/invocations", "InvokeEndpoint"),
    View("POST", "/endpoints/<name>/invocations-response-stream", "InvokeEndpointWithResponseStream"),
)
BIDIRECTIONAL_VIEWS = (
    View(
        "POST", "/endpoints/<name>/invocations-bidirectional-stream", "InvokeEndpointWithBidirectionalStream"
    ),
)


def json_targets(control: SageMakerControl) -> dict[str, Mapping[str, Operation]]:
    """The control plane for awsJson1.1's one `POST /` (emulator.wire.awsjson)."""
    return {TARGET_PREFIX: control.operations()}


def blueprints(
    config: EmulatorConfig, router: Router, runtime: Runtime, http: httpx.AsyncClient
) -> list[Blueprint]:
    return [
        views_blueprint(
            "sagemaker_runtime", RUNTIME_VIEWS, runtime_handlers(config, router, http), rest_json_error
        ),
        views_blueprint(
            "sagemaker_runtime_http2",
            BIDIRECTIONAL_VIEWS,
            bidirectional_handlers(config, router, runtime),
            rest_json_error,
        ),
    ]
