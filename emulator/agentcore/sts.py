"""STS GetCallerIdentity (awsQuery: a form-encoded `Action=...` POST, an XML answer): who am I.

The deploy commands confirm credentials with it before `status` and `destroy`; with this face they run
unchanged against the emulator. It is served under `/sts/` (boto3 keeps the path of
`AWS_ENDPOINT_URL_STS`), because `POST /` belongs to the SageMaker control plane. The identity is
the emulator's account; any credentials pass unless SigV4 keys are configured.
"""

from __future__ import annotations

from quart import Blueprint, Response, request

from emulator.config import EmulatorConfig
from emulator.wire.awserrors import AwsError, query_error, render_errors, request_id

NAMESPACE = "https://sts.amazonaws.com/doc/2011-06-15/"
PATH = "/sts/"


def sts_blueprint(config: EmulatorConfig) -> Blueprint:
    bp = Blueprint("sts", __name__)
    render_errors(bp, lambda err: query_error(err, NAMESPACE))

    @bp.post(PATH)
    async def dispatch() -> Response:
        form = await request.form
        try:
            action = form.get("Action", "")
            if action != "GetCallerIdentity":
                raise AwsError("InvalidAction", f"STS action {action or '(none)'} is not emulated")
        except AwsError as err:
            return query_error(err, NAMESPACE)
        body = (
            f'<GetCallerIdentityResponse xmlns="{NAMESPACE}"><GetCallerIdentityResult>'
            f"<Arn>arn:aws:iam::{config.account_id}:user/emulator</Arn>"
            f"<UserId>AIDAEMULATOR{config.account_id}</UserId><Account>{config.account_id}</Account>"
            f"</GetCallerIdentityResult><ResponseMetadata><RequestId>{request_id()}</RequestId>"
            "</ResponseMetadata></GetCallerIdentityResponse>"
        )
        return Response(body, content_type="text/xml")

    return bp
