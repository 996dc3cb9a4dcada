"""The deployed path, locally: the agent as the emulator's AgentCore runtime `voice_agent`, reached
with boto3 `bedrock-agentcore` (`invoke_agent_runtime` on its ARN) as `agent-infra demo` reaches AWS,
speaking through the real Kokoro container behind the emulated SageMaker endpoint."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import boto3
import pytest

from emulator.config import EmulatorConfig
from local_stack.stack import local_stack
from tests.integration.conftest import LONG_PROMPT, assert_bidi_speaks_before_the_answer_is_complete
from tools.demo import compare, runtime_chunks
from tts.wire.sse import SSEParser

pytestmark = pytest.mark.integration


def test_the_voice_agent_runtime_is_listed_ready(stack):
    runtimes = boto3.client("bedrock-agentcore-control").list_agent_runtimes()["agentRuntimes"]
    assert [(r["agentRuntimeName"], r["status"], r["agentRuntimeArn"]) for r in runtimes] == [
        ("voice_agent", "READY", stack.runtime_arn)
    ]


def test_invoke_agent_runtime_streams_a_spoken_turn(stack):
    parser, events = SSEParser(), []
    payload = {"prompt": "Where is my order?", "mode": "bidi"}
    for raw in runtime_chunks(stack.runtime_arn, payload, "integration-" + "1" * 30):
        events += parser.feed(raw)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end" and "error" not in kinds
    assert events[-1]["ok"] is True and events[-1]["audio_s"] > 1.0
    assert kinds.count("audio_chunk") > 5 and kinds.index("audio_chunk") < len(kinds) - 1


# slow: both modes of the long answer (18 s); the AgentCore hop is
# test_invoke_agent_runtime_streams_a_spoken_turn and the demo test_agent_stack.py's, in the default run.
@pytest.mark.slow
def test_demo_cli_through_the_runtime_arn_reports_the_ratio(stack):
    """Through AgentCore's InvokeAgentRuntime, as deployed: bidi speaks while the answer is still being
    written, batch only once it is complete (the ratio's size is `python -m benchmarks agent`'s)."""
    result = subprocess.run(
        [
            *(sys.executable, "-m", "deploy", "demo", "--endpoint-url", stack.runtime_arn),
            *("--prompt", LONG_PROMPT, "--runs", "1", "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=400,
        check=True,
        env={**os.environ, **stack.env},
    )
    summary = json.loads(result.stdout)
    print(f"\nAgentCore hop, loopback: {summary}")
    assert_bidi_speaks_before_the_answer_is_complete(summary)


@pytest.mark.slow
@pytest.mark.timeout(
    1800
)  # two stacks, twelve turns; a batch turn alone took a minute on a busy 2-core machine
def test_the_latency_knob_on_every_hop_changes_the_ratio(tmp_path):
    """The deployed comparison: 25 ms (+-5) each way on the AgentCore and SageMaker hops,
    against loopback. Prints both ratios; each condition is its own stack, warmed by one turn."""
    base = dataclasses.replace(EmulatorConfig(), http_port=0, h2_port=0, home=tmp_path)
    knobs = {"latency_in_ms": 25.0, "latency_out_ms": 25.0, "jitter_in_ms": 5.0, "jitter_out_ms": 5.0}
    ratios = {}
    for name, config in (("loopback", base), ("latency", dataclasses.replace(base, **knobs))):
        with local_stack(config) as stack, pytest.MonkeyPatch.context() as patch:
            for name, value in stack.env.items():  # compare's boto3 client reaches this stack
                patch.setenv(name, value)
            compare(stack.runtime_arn, "Where is my order?", runs=1)
            summary = compare(stack.runtime_arn, "Where is my order, and when will it arrive?", runs=2)
        ratios[name] = summary["ratio"]
        print(
            f"\n{name}: bidi TTFA {summary['bidi']['ttfa_ms']:.0f} ms, "
            f"batch TTFA {summary['batch']['ttfa_ms']:.0f} ms, ratio {summary['ratio']}"
        )
    assert all(ratio > 1.0 for ratio in ratios.values()), ratios
