import dataclasses

import pytest

from emulator.config import EmulatorConfig
from local_stack.stack import local_stack


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """Emulator (real Kokoro container behind SageMaker's bidi protocol, Bedrock) + agent, shared.
    Bedrock answers with the paced script: these tests check its fixed answer's sentences and words."""
    config = dataclasses.replace(
        EmulatorConfig(), http_port=0, h2_port=0, home=tmp_path_factory.mktemp("emu"), llm_backend="script"
    )
    with local_stack(config) as running, pytest.MonkeyPatch.context() as patch:
        for name, value in running.env.items():  # the tests' own boto3 clients reach this stack
            patch.setenv(name, value)
        yield running
