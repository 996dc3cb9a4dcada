import dataclasses
import json

import httpx
import pytest

from emulator.config import EmulatorConfig
from local_stack.stack import local_stack
from tts.wire.sse import SSEParser

LONG_PROMPT = "Tell me the whole story of my order."
"""Asked of the `stack`, the paced script answers LONG_REPLY instead of its fixed four sentences."""
LONG_REPLY = (
    "Thanks for waiting, I found your order and its whole story. It left our Denver warehouse yesterday "
    "morning on a truck bound for the regional hub. Late last night it was scanned in Kansas City, where "
    "it waited for the first delivery van of the day. This morning it moved on to your local depot, and "
    "the driver has it on today's route. You should find it on your doorstep by Thursday at the latest. "
    "If you need it sooner, I can upgrade the shipping at no cost, or hold it at a pickup point near "
    "your office. Would you like me to do either of those now?"
)
"""124 tokens (2.5 s of writing: the script's first token at 0.4 s, then 60 a second) and about 40 s
of speech: where a test needs time to act, it asks LONG_PROMPT (bidi's first audio well before the
answer is complete; seconds of audio still to play once the whole answer has arrived, with synthesis
anywhere below real time), instead of assuming the machine is fast."""


def assert_bidi_speaks_before_the_answer_is_complete(summary: dict) -> None:
    """`agent-infra demo --json` on LONG_PROMPT: bidi's first audio comes while the model still writes,
    batch's once the whole answer is written."""
    assert set(summary) == {"bidi", "batch", "ratio"}
    assert set(summary["bidi"]) == {"ttfa_ms", "ttft_ms", "complete_ms", "total_ms"}
    bidi, batch = summary["bidi"], summary["batch"]
    assert 0 < bidi["ttft_ms"] < bidi["ttfa_ms"] < bidi["complete_ms"], "bidi speaks while the model writes"
    assert batch["complete_ms"] <= batch["ttfa_ms"], "batch speaks once the whole answer is written"
    assert summary["ratio"] == pytest.approx(batch["ttfa_ms"] / bidi["ttfa_ms"], rel=0.01)


def invoke(stack, payload: dict) -> list[dict]:
    """One turn through the agent replica's HTTP API: its Server-Sent Events, in order."""
    parser, events = SSEParser(), []
    with httpx.stream("POST", f"{stack.agent_url}/invocations", json=payload, timeout=120) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for raw in response.iter_raw():
            events += parser.feed(raw)
    return events


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """Emulator (real Kokoro container behind SageMaker's bidi protocol, Bedrock) + agent, shared.
    Bedrock answers with the paced script: these tests check its fixed answer's sentences and words
    (LONG_REPLY to LONG_PROMPT)."""
    home = tmp_path_factory.mktemp("emu")
    script = home / "llm-script.json"
    script.write_text(json.dumps({LONG_PROMPT: LONG_REPLY}), encoding="utf-8")
    config = dataclasses.replace(
        EmulatorConfig(), http_port=0, h2_port=0, home=home, llm_backend="script", llm_script=str(script)
    )
    with local_stack(config) as running, pytest.MonkeyPatch.context() as patch:
        for name, value in running.env.items():  # the tests' own boto3 clients reach this stack
            patch.setenv(name, value)
        yield running
