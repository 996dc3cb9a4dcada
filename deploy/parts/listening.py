"""The listening part: the speech-to-text endpoint (Whisper base and Silero VAD, the stt container's GPU
image) on SageMaker: its model role and its endpoint. The weights are in the image, so it has no model
cache. Deployed with `--listen` (or `speech-infra deploy whisper-stt`): the agent then gets its name
and the right to stream to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from deploy.config import EndpointSettings
from deploy.model_dir import ModelSource
from deploy.naming import listening_stack
from deploy.part import Identity
from deploy.parts.endpoint import EndpointPart
from facts import STT_ENDPOINT

if TYPE_CHECKING:
    from deploy.stacks import cdk


class ListeningPart(EndpointPart):
    kind = "listening"
    image_name = "stt"

    @property
    def settings(self) -> EndpointSettings:
        return self.config.listening_endpoint

    @property
    def stacks(self) -> tuple[str, ...]:
        return listening_stack("Base"), listening_stack("Endpoint")

    def build(self, app: cdk.App, source: Callable[[], ModelSource]) -> list[cdk.Stack]:
        # Imported here: aws-cdk-lib is the `cdk` extra, and status and destroy run without it.
        from deploy.stacks.endpoint import stt_environment

        return self.endpoint_stacks(
            app, self.stacks, model=STT_ENDPOINT, environment=stt_environment(self.settings)
        )

    def retained(self, identity: Identity, outputs: dict[str, dict[str, str]]) -> list[str]:
        image_uri = outputs.get(listening_stack("Endpoint"), {}).get("ImageUri")
        return self.endpoint_retained(identity, image_uri)
