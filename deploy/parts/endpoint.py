"""An endpoint of the product (deploy/product.py) as a part: the Kokoro endpoint `kokoro-82m`, which
speaks, and the Whisper endpoint `whisper-stt`, which listens (deployed with `--listen`, or by name).

Its stacks are the definition's: a model cache when its weights come from S3 (Kokoro's: hexgrad's
layout, from `--model-source`; Whisper's weights are in its image), its model role, the endpoint, and
a dashboard with alarms when it writes EMF metrics (Kokoro's). Each runs one GPU image, so each reads
that image's CUDA build and the AMI that runs it (deploy/gpu.py), checks an image URI's region, waits
for InService and names what destroy leaves of it (its image, its log group, the model cache)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from deploy.aws import Aws
from deploy.config import DeployConfig, EndpointSettings
from deploy.errors import ConfigError, Problem
from deploy.gpu import Ami, CudaBuild, choose_ami, cuda_build, is_gpu_instance
from deploy.images import parse_ecr_uri
from deploy.model_dir import ModelSource
from deploy.parts.base import Identity, Part
from deploy.product import Endpoint
from deploy.status import Status, endpoint_status
from deploy.teardown import image_lines
from deploy.waiters import wait_endpoint_in_service

if TYPE_CHECKING:
    from deploy.stacks import cdk
    from deploy.stacks.model_cache import ModelCacheStack


class EndpointPart(Part):
    def __init__(self, config: DeployConfig, settings: EndpointSettings) -> None:
        super().__init__(config)
        self.settings = settings
        """Its endpoint as the config asks for it (`DeployConfig.speech_endpoint`, `.listening_endpoint`)."""

    @property
    def definition(self) -> Endpoint:
        return self.settings.definition

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def stacks(self) -> tuple[str, ...]:
        return self.definition.stacks

    def environment(self) -> dict[str, str]:
        """Its container's settings: the product's (with the voice asked for), then its GPU image's."""
        gpu = is_gpu_instance(self.settings.instance_type)
        return {**self.definition.settings(self.config.voice), **self.settings.image.settings(gpu)}

    def image_build(self) -> CudaBuild | None:
        """The library and CUDA build the GPU image installs; None for an image given by URI."""
        settings = self.settings
        if settings.image_uri or not is_gpu_instance(settings.instance_type):
            return None
        return cuda_build(self.config.source_dir / settings.image.requirements, settings.image.library)

    def inference_ami(self) -> Ami | None:
        """The endpoint's GPU AMI (deploy/gpu.py); None on an instance without a GPU."""
        if not is_gpu_instance(self.settings.instance_type):
            return None
        return choose_ami(self.image_build(), self.config.inference_ami, image=f"{self.name} image")

    def summary(self) -> list[str]:
        build, ami = self.image_build(), self.inference_ami()
        if ami is None:
            return [f"{self.name}: {self.settings.instance_type} has no GPU, so no inference AMI is set"]
        image = build.describe() if build else f"{self.settings.image_uri} (CUDA build not known here)"
        return [f"{self.name}: image {image}", f"{self.name}: inference AMI {ami.describe()}"]

    def builds_image(self) -> bool:
        return not self.settings.image_uri

    def check(self, aws: Aws, identity: Identity, parts: Sequence[Part], problems: list[Problem]) -> None:
        """SageMaker requires the ECR image in the region of the model (ContainerDefinition.Image)."""
        image_uri = self.settings.image_uri
        if not image_uri:
            return
        image_region = parse_ecr_uri(image_uri).region
        if image_region != identity.region:
            problems.append(
                Problem(
                    f"{self.name} image region",
                    f"{image_uri} is in {image_region}, the deploy goes to {identity.region}",
                    f"push the image to ECR in {identity.region}, or deploy to {image_region}",
                )
            )

    def wait(self, aws: Aws) -> Status:
        return wait_endpoint_in_service(
            aws.client("sagemaker"),
            self.settings.name,
            delay_s=self.config.wait_delay_s,
            attempts=self.config.wait_attempts,
        )

    def status(self, aws: Aws) -> Status:
        return endpoint_status(aws.client("sagemaker"), self.settings.name)

    def model_cache(self, app: cdk.App, source: Callable[[], ModelSource]) -> ModelCacheStack | None:
        """Its model cache's stack, when its weights come from S3: the model source, which must hold the
        voice the endpoint speaks with."""
        # Imported here: aws-cdk-lib is the `cdk` extra, and status and destroy run without it.
        from deploy.stacks.model_cache import ModelCacheStack

        if not self.definition.model_cache:
            return None
        model, voice = source(), self.config.voice
        if self.definition.voice_variable and voice not in model.voices:
            raise ConfigError(
                f"the model source has no voice {voice!r} (it has {', '.join(model.voices)}); "
                "pass --voice with one of them"
            )
        return ModelCacheStack(
            app, self.definition.stack("ModelCache"), endpoint=self.definition, model=model
        )

    def build(self, app: cdk.App, source: Callable[[], ModelSource]) -> list[cdk.Stack]:
        """Its stacks, in deploy order."""
        from deploy.stacks.endpoint import EndpointSpec, EndpointStack, ModelRoleStack
        from deploy.stacks.observability import ObservabilityStack

        definition, settings = self.definition, self.settings
        cache = self.model_cache(app, source)
        data = cache.model_data if cache else None
        stacks: list[cdk.Stack] = [cache] if cache else []
        base = ModelRoleStack(app, definition.stack("Base"), settings=settings, model_data=data)
        endpoint = EndpointStack(
            app,
            definition.stack("Endpoint"),
            spec=EndpointSpec(settings, self.environment(), self.inference_ami(), data),
            source_dir=self.config.source_dir,
            model_role_arn=base.model_role.role_arn,
        )
        stacks += [base, endpoint]
        if definition.dashboard:
            observability = ObservabilityStack(
                app, definition.stack("Observability"), config=self.config, settings=settings
            )
            observability.add_dependency(endpoint)
            stacks.append(observability)
        return stacks

    def retained(self, identity: Identity, outputs: dict[str, dict[str, str]]) -> list[str]:
        """The model cache, the image (the Endpoint stack's `ImageUri` output) and the log group."""
        log_group = f"/aws/sagemaker/Endpoints/{self.settings.name}"
        image_uri = outputs.get(self.definition.stack("Endpoint"), {}).get("ImageUri")
        return [
            *self.cache_retained(identity, outputs),
            *image_lines(image_uri, identity, self.name),
            f"- CloudWatch Logs: {log_group}",
            f"    delete: aws logs delete-log-group --log-group-name {log_group} --region {identity.region}",
        ]

    def cache_retained(self, identity: Identity, outputs: dict[str, dict[str, str]]) -> list[str]:
        if not self.definition.model_cache:
            return []
        stack = self.definition.stack("ModelCache")
        bucket = outputs.get(stack, {}).get("BucketName")
        if bucket:
            prefix = self.definition.model_prefix
            return [
                f"- S3 model cache: bucket {bucket} (weights and voices under {prefix})",
                f"    delete: aws s3 rb s3://{bucket} --force --region {identity.region}",
            ]
        prefix = stack.lower()
        return [
            f"- S3 model cache: a bucket named {prefix}-modelbucket... (no outputs left to name it)",
            f"    find: aws s3api list-buckets --query \"Buckets[?starts_with(Name, '{prefix}')].Name\"",
            "    delete: aws s3 rb s3://BUCKET --force",
        ]
