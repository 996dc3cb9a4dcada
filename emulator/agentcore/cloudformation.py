"""CloudFormation DescribeStacks and DeleteStack (awsQuery), for the stacks the emulator holds.

`agent-infra destroy` deletes the deploy's stacks by name and waits with boto3's
`stack_delete_complete`; with this face it runs unchanged against the emulator. A stack here is the
set of agent runtimes tagged `aws:cloudformation:stack-name: <stack>` (the tag CloudFormation puts
on what it creates; the default manifest gives `voice_agent` the deploy's `VoiceAgent-Runtime`). A
stack has the outputs the deploy's runtime stack declares (RuntimeArn, RuntimeId,
RuntimeEndpointName, ImageUri); deleting it deletes its runtimes (`DELETE_IN_PROGRESS` until they are
gone, then "does not exist", as for a deleted stack). Served under `/cloudformation/` (boto3 keeps
the path of `AWS_ENDPOINT_URL_CLOUDFORMATION`) because `POST /` is the SageMaker control plane.
Templates, create and update are not emulated.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from quart import Blueprint, Response, request

from emulator.agentcore.operations import AgentRuntimeControl, iso
from emulator.config import EmulatorConfig
from emulator.controller.store import AgentRuntime
from emulator.wire.awserrors import AwsError, query_error, render_errors, request_id

NAMESPACE = "http://cloudformation.amazonaws.com/doc/2010-05-15/"
PATH = "/cloudformation/"
STACK_TAG = "aws:cloudformation:stack-name"


def stack_runtimes(control: AgentRuntimeControl, stack: str) -> list[AgentRuntime]:
    return [
        rt
        for rt in control.store.agent_runtimes.values()
        if (rt.request.get("tags") or {}).get(STACK_TAG) == stack
    ]


def _outputs(runtime: AgentRuntime) -> dict[str, str]:
    artifact = runtime.request.get("agentRuntimeArtifact") or {}
    named = [name for name in runtime.endpoints if name != "DEFAULT"]
    return {
        "RuntimeArn": runtime.arn,
        "RuntimeId": runtime.id,
        "RuntimeEndpointName": named[0] if named else "DEFAULT",
        "ImageUri": str(artifact.get("containerConfiguration", {}).get("containerUri", "")),
    }


def _stack_xml(config: EmulatorConfig, name: str, runtimes: list[AgentRuntime]) -> str:
    deleting = any(rt.status == "DELETING" for rt in runtimes)
    outputs = "".join(
        f"<member><OutputKey>{key}</OutputKey><OutputValue>{escape(value)}</OutputValue></member>"
        for key, value in _outputs(runtimes[0]).items()
    )
    stack_id = f"arn:aws:cloudformation:{config.region}:{config.account_id}:stack/{name}/{runtimes[0].id}"
    return (
        f"<member><StackName>{escape(name)}</StackName><StackId>{escape(stack_id)}</StackId>"
        f"<CreationTime>{iso(min(rt.created for rt in runtimes))}</CreationTime>"
        f"<StackStatus>{'DELETE_IN_PROGRESS' if deleting else 'CREATE_COMPLETE'}</StackStatus>"
        f"<Outputs>{outputs}</Outputs></member>"
    )


def cloudformation_blueprint(config: EmulatorConfig, control: AgentRuntimeControl) -> Blueprint:
    bp = Blueprint("cloudformation", __name__)
    render_errors(bp, lambda err: query_error(err, NAMESPACE))

    def answer(action: str, result: str) -> Response:
        body = (
            f'<{action}Response xmlns="{NAMESPACE}"><{action}Result>{result}</{action}Result>'
            f"<ResponseMetadata><RequestId>{request_id()}</RequestId></ResponseMetadata></{action}Response>"
        )
        return Response(body, content_type="text/xml")

    @bp.post(PATH)
    async def dispatch() -> Response:
        form = await request.form
        action, name = form.get("Action", ""), form.get("StackName", "")
        try:
            if action not in {"DescribeStacks", "DeleteStack"}:
                raise AwsError("InvalidAction", f"CloudFormation action {action or '(none)'} is not emulated")
            if not name:
                raise AwsError("ValidationError", "StackName is required (listing stacks is not emulated)")
            runtimes = stack_runtimes(control, name)
            if not runtimes and action == "DescribeStacks":
                raise AwsError("ValidationError", f"Stack with id {name} does not exist")
        except AwsError as err:
            return query_error(err, NAMESPACE)
        if action == "DeleteStack":  # deleting a stack that does not exist succeeds, as on AWS
            for runtime in runtimes:
                control.DeleteAgentRuntime({"agentRuntimeId": runtime.id})
            return answer(action, "")
        return answer(action, f"<Stacks>{_stack_xml(config, name, runtimes)}</Stacks>")

    return bp
