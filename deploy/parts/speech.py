"""The speech part: the Kokoro endpoint on SageMaker (model cache, model role, endpoint) and its
dashboard and alarms."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from deploy.aws import Aws
from deploy.errors import Problem
from deploy.gpu import Ami, TorchBuild, choose_ami, is_gpu_instance, torch_build
from deploy.images import parse_ecr_uri
from deploy.model_dir import ModelSource
from deploy.naming import model_prefix, speech_stack
from deploy.part import Identity, Part
from deploy.status import Status, endpoint_status
from deploy.teardown import image_lines
from deploy.waiters import wait_endpoint_in_service

if TYPE_CHECKING:
    from deploy.stacks import cdk


class SpeechPart(Part):
    kind = "speech"

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
        from deploy.stacks.base import SpeechBaseStack
        from deploy.stacks.endpoint import EndpointStack
        from deploy.stacks.model_cache import ModelCacheStack
        from deploy.stacks.observability import ObservabilityStack

        config, model = self.config, source()
        cache = ModelCacheStack(
            app, speech_stack(config.model, "ModelCache"), config=config, model_dir=model.directory
        )
        base = SpeechBaseStack(app, speech_stack(config.model, "Base"), config=config, bucket=cache.bucket)
        endpoint = EndpointStack(
            app,
            speech_stack(config.model, "Endpoint"),
            config=config,
            model_role_arn=base.model_role.role_arn,
            model_data_uri=cache.model_data_uri,
            default_voice=config.tts_voice or model.default_voice,
            ami=self.inference_ami(),
        )
        observability = ObservabilityStack(
            app,
            speech_stack(config.model, "Observability"),
            config=config,
            endpoint_name=config.endpoint_name,
        )
        observability.add_dependency(endpoint)
        return [cache, base, endpoint, observability]

    def image_torch(self) -> TorchBuild | None:
        """The torch and CUDA build the GPU image installs; None for an image given by URI."""
        if self.config.tts_image_uri or not is_gpu_instance(self.config.instance_type):
            return None
        return torch_build(self.config.tts_requirements)

    def inference_ami(self) -> Ami | None:
        """The endpoint's GPU AMI (deploy/gpu.py); None on an instance without a GPU."""
        if not is_gpu_instance(self.config.instance_type):
            return None
        return choose_ami(self.image_torch(), self.config.inference_ami)

    def summary(self) -> list[str]:
        torch, ami = self.image_torch(), self.inference_ami()
        if ami is None:
            return [f"speech: {self.config.instance_type} has no GPU, so no inference AMI is set"]
        image = torch.describe() if torch else f"{self.config.tts_image_uri} (CUDA build not known here)"
        return [f"speech: tts image {image}", f"speech: inference AMI {ami.describe()}"]

    def builds_image(self) -> bool:
        return not self.config.tts_image_uri

    def check(self, aws: Aws, identity: Identity, parts: Sequence[Part], problems: list[Problem]) -> None:
        """SageMaker requires the ECR image in the region of the model (ContainerDefinition.Image)."""
        if not self.config.tts_image_uri:
            return
        image_region = parse_ecr_uri(self.config.tts_image_uri).region
        if image_region != identity.region:
            problems.append(
                Problem(
                    "tts image region",
                    f"{self.config.tts_image_uri} is in {image_region}, the deploy goes to {identity.region}",
                    f"push the image to ECR in {identity.region}, or deploy to {image_region}",
                )
            )

    def wait(self, aws: Aws) -> Status:
        return wait_endpoint_in_service(
            aws.client("sagemaker"),
            self.config.endpoint_name,
            delay_s=self.config.wait_delay_s,
            attempts=self.config.wait_attempts,
        )

    def status(self, aws: Aws) -> Status:
        return endpoint_status(aws.client("sagemaker"), self.config.endpoint_name)

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
        endpoint_outputs = outputs.get(speech_stack(config.model, "Endpoint"), {})
        lines += image_lines(endpoint_outputs.get("ImageUri"), identity, "tts")
        log_group = f"/aws/sagemaker/Endpoints/{config.endpoint_name}"
        return [
            *lines,
            f"- CloudWatch Logs: {log_group}",
            f"    delete: aws logs delete-log-group --log-group-name {log_group} --region {region}",
        ]
