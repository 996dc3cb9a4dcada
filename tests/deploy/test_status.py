"""Status lines read from DescribeEndpoint and GetAgentRuntime (moto's server): ready, or why not."""

import pytest

from deploy.aws import Aws
from deploy.errors import WaitFailed
from deploy.status import endpoint_status, runtime_status
from deploy.waiters import wait_endpoint_in_service, wait_runtime_ready
from tests.deploy.conftest import REGION, create_endpoint, create_runtime, moto_endpoint, moto_runtime


def test_endpoint_not_deployed(aws: Aws):
    status = endpoint_status(aws.client("sagemaker"), "kokoro-82m")
    assert (status.state, status.ready) == ("not deployed", False)
    assert str(status) == f"-- endpoint kokoro-82m: not deployed (no endpoint named kokoro-82m in {REGION})"


def test_endpoint_in_service_names_instances(aws: Aws):
    create_endpoint(aws, "kokoro-82m")
    status = endpoint_status(aws.client("sagemaker"), "kokoro-82m")
    assert str(status) == "ok endpoint kokoro-82m: InService (ml.g4dn.xlarge x1)"


def test_endpoint_failed_says_why(aws: Aws):
    create_endpoint(aws, "kokoro-82m")
    record = moto_endpoint("kokoro-82m")  # moto never fails a launch by itself
    record.endpoint_status = "Failed"
    record.failure_reason = "The primary container did not pass the ping health check."
    status = endpoint_status(aws.client("sagemaker"), "kokoro-82m")
    assert (status.state, status.ready) == ("Failed", False)
    assert status.detail == "The primary container did not pass the ping health check."


def test_endpoint_creating_is_not_ready(aws: Aws):
    create_endpoint(aws, "kokoro-82m")
    moto_endpoint("kokoro-82m").endpoint_status = "Creating"
    status = endpoint_status(aws.client("sagemaker"), "kokoro-82m")
    assert (status.state, status.ready) == ("Creating", False)
    assert "not in service yet" in status.detail


def test_waiting_for_a_failed_endpoint_raises_with_the_reason(aws: Aws):
    create_endpoint(aws, "kokoro-82m")
    record = moto_endpoint("kokoro-82m")
    record.endpoint_status, record.failure_reason = "Failed", "CUDA error: no kernel image"
    with pytest.raises(WaitFailed, match="CUDA error: no kernel image"):
        wait_endpoint_in_service(aws.client("sagemaker"), "kokoro-82m", delay_s=0.01, attempts=5)


def test_waiting_gives_up_after_the_configured_attempts(aws: Aws):
    create_endpoint(aws, "kokoro-82m")
    moto_endpoint("kokoro-82m").endpoint_status = "Creating"
    with pytest.raises(WaitFailed, match="still not InService after 3 checks"):
        wait_endpoint_in_service(aws.client("sagemaker"), "kokoro-82m", delay_s=0.01, attempts=3)


def test_waiting_for_a_missing_endpoint_fails_at_once(aws: Aws):
    with pytest.raises(WaitFailed, match="not deployed"):
        wait_endpoint_in_service(aws.client("sagemaker"), "kokoro-82m", delay_s=5, attempts=100)


def test_runtime_not_deployed(aws: Aws):
    status = runtime_status(aws.client("bedrock-agentcore-control"), "voice_agent")
    assert (status.state, status.ready) == ("not deployed", False)
    assert f"no AgentCore runtime named voice_agent in {REGION}" in str(status)


def test_runtime_creating_then_ready(aws: Aws, runtime_reads_until_ready):
    runtime_reads_until_ready(3)
    create_runtime(aws, "voice_agent", {"AGENT_TTS_ENDPOINT": "kokoro-82m", "AGENT_BEDROCK_MODEL_ID": "m.x"})
    agentcore = aws.client("bedrock-agentcore-control")
    creating = runtime_status(agentcore, "voice_agent")
    assert (creating.state, creating.ready, creating.detail) == ("CREATING", False, "not ready yet")
    ready = wait_runtime_ready(agentcore, "voice_agent", delay_s=0.01, attempts=10)
    assert (
        str(ready)
        == "ok agent runtime voice_agent: READY (version 1, speaks through kokoro-82m, thinks with m.x)"
    )


def test_a_runtime_that_listens_says_through_which_endpoint(aws: Aws):
    env = {"AGENT_TTS_ENDPOINT": "kokoro-82m", "AGENT_STT_ENDPOINT": "whisper-stt"}
    create_runtime(aws, "voice_agent", env)
    status = runtime_status(aws.client("bedrock-agentcore-control"), "voice_agent")
    assert status.detail == "version 1, speaks through kokoro-82m, listens through whisper-stt"


def test_runtime_that_never_gets_ready_times_out(aws: Aws, runtime_reads_until_ready):
    runtime_reads_until_ready(100)
    create_runtime(aws, "voice_agent")
    with pytest.raises(WaitFailed, match="still not READY after 2 checks"):
        wait_runtime_ready(aws.client("bedrock-agentcore-control"), "voice_agent", delay_s=0.01, attempts=2)


def test_runtime_failed_is_not_ready(aws: Aws):
    moto_runtime(create_runtime(aws, "voice_agent")).status = "CREATE_FAILED"
    status = runtime_status(aws.client("bedrock-agentcore-control"), "voice_agent")
    assert (status.state, status.ready) == ("CREATE_FAILED", False)
    with pytest.raises(WaitFailed, match="CREATE_FAILED"):
        wait_runtime_ready(aws.client("bedrock-agentcore-control"), "voice_agent", delay_s=0.01, attempts=5)
