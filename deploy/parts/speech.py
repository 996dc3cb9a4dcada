"""The speech part: the Kokoro endpoint on SageMaker (model cache, model role, endpoint) and its
dashboard and alarms."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from deploy.config import EndpointSettings
from deploy.model_dir import LEXICON_FILE, ModelSource
from deploy.naming import model_prefix, speech_stack
from deploy.part import Identity
from deploy.parts.endpoint import EndpointPart

if TYPE_CHECKING:
    from deploy.stacks import cdk


class SpeechPart(EndpointPart):
    kind = "speech"
    image_name = "tts"

    @property
    def settings(self) -> EndpointSettings:
        return self.config.speech_endpoint

    @property
    def stacks(self) -> tuple[str, ...]:
        model = self.config.model
        stacks = (
            speech_stack(model, "ModelCache"),
            speech_stack(model, "Base"),
            speech_stack(model, "Endpoint"),
            speech_stack(model, "Observability"),
        )
        return stacks

    def build(self, app: cdk.App, source: Callable[[], ModelSource]) -> list[cdk.Stack]:
        # Imported here: aws-cdk-lib is the `cdk` extra, and status and destroy run without it.
        from deploy.stacks.endpoint import tts_environment
        from deploy.stacks.model_cache import ModelCacheStack
        from deploy.stacks.observability import ObservabilityStack

        config, model = self.config, source()
        cache_id, base_id, endpoint_id, observability_id = self.stacks
        cache = ModelCacheStack(app, cache_id, config=config, model_dir=model.directory)
        base, endpoint = self.endpoint_stacks(
            app,
            (base_id, endpoint_id),
            model=config.model,
            environment=tts_environment(
                self.settings,
                config.tts_voice or model.default_voice,
                LEXICON_FILE if (model.directory / LEXICON_FILE).is_file() else None,
            ),
            model_data=cache.model_data,
        )
        observability = ObservabilityStack(
            app, observability_id, config=config, endpoint_name=config.endpoint_name
        )
        observability.add_dependency(endpoint)
        return [cache, base, endpoint, observability]

    def retained(self, identity: Identity, outputs: dict[str, dict[str, str]]) -> list[str]:
        config, region = self.config, identity.region
        bucket = outputs.get(speech_stack(config.model, "ModelCache"), {}).get("BucketName")
        if bucket:
            lines = [
                f"- S3 model cache: bucket {bucket} (weights and voices under {model_prefix(config.model)})",
                f"    delete: aws s3 rb s3://{bucket} --force --region {region}",
            ]
        else:
            prefix = speech_stack(config.model, "ModelCache").lower()
            lines = [
                f"- S3 model cache: a bucket named {prefix}-modelbucket... (no outputs left to name it)",
                f"    find: aws s3api list-buckets --query \"Buckets[?starts_with(Name, '{prefix}')].Name\"",
                "    delete: aws s3 rb s3://BUCKET --force",
            ]
        image_uri = outputs.get(speech_stack(config.model, "Endpoint"), {}).get("ImageUri")
        return [*lines, *self.endpoint_retained(identity, image_uri)]
