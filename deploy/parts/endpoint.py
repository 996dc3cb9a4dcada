"""What the two endpoint parts share (the Kokoro endpoint, which speaks, and the Whisper endpoint, which
listens): each runs one GPU image on a SageMaker endpoint, so each reads that image's CUDA build and the
AMI that runs it (deploy/gpu.py), checks an image URI's region, waits for InService and names what
destroy leaves of it (its image, its log group)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from deploy.aws import Aws
from deploy.config import EndpointSettings
from deploy.errors import Problem
from deploy.gpu import Ami, CudaBuild, choose_ami, cuda_build, is_gpu_instance
from deploy.images import parse_ecr_uri
from deploy.part import Identity, Part
from deploy.status import Status, endpoint_status
from deploy.teardown import image_lines
from deploy.waiters import wait_endpoint_in_service

if TYPE_CHECKING:
    from deploy.stacks import cdk
    from deploy.stacks.base import ModelData


class EndpointPart(Part):
    image_name: str
    """How the messages name its image: `tts`, `stt`."""

    @property
    @abstractmethod
    def settings(self) -> EndpointSettings:
        """Its endpoint as the config asks for it (`DeployConfig.speech_endpoint`, `.listening_endpoint`)."""

    @property
    def endpoint_name(self) -> str:
        return self.settings.name

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
        return choose_ami(self.image_build(), self.config.inference_ami, image=f"{self.image_name} image")

    def summary(self) -> list[str]:
        build, ami = self.image_build(), self.inference_ami()
        if ami is None:
            return [f"{self.kind}: {self.settings.instance_type} has no GPU, so no inference AMI is set"]
        image = build.describe() if build else f"{self.settings.image_uri} (CUDA build not known here)"
        return [
            f"{self.kind}: {self.image_name} image {image}",
            f"{self.kind}: inference AMI {ami.describe()}",
        ]

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
                    f"{self.image_name} image region",
                    f"{image_uri} is in {image_region}, the deploy goes to {identity.region}",
                    f"push the image to ECR in {identity.region}, or deploy to {image_region}",
                )
            )

    def wait(self, aws: Aws) -> Status:
        return wait_endpoint_in_service(
            aws.client("sagemaker"),
            self.endpoint_name,
            delay_s=self.config.wait_delay_s,
            attempts=self.config.wait_attempts,
        )

    def status(self, aws: Aws) -> Status:
        return endpoint_status(aws.client("sagemaker"), self.endpoint_name)

    def endpoint_stacks(
        self,
        app: cdk.App,
        stack_ids: tuple[str, str],
        *,
        model: str,
        environment: dict[str, str],
        model_data: ModelData | None = None,
    ) -> list[cdk.Stack]:
        """Its model role's stack and its endpoint's (`stack_ids`, in that order)."""
        # Imported here: aws-cdk-lib is the `cdk` extra, and status and destroy run without it.
        from deploy.stacks.base import ModelRoleStack
        from deploy.stacks.endpoint import EndpointSpec, EndpointStack

        base_id, endpoint_id = stack_ids
        base = ModelRoleStack(app, base_id, model=model, settings=self.settings, model_data=model_data)
        endpoint = EndpointStack(
            app,
            endpoint_id,
            spec=EndpointSpec(self.settings, environment, self.inference_ami(), model_data),
            source_dir=self.config.source_dir,
            model_role_arn=base.model_role.role_arn,
        )
        return [base, endpoint]

    def endpoint_retained(self, identity: Identity, image_uri: str | None) -> list[str]:
        """The image (the Endpoint stack's `ImageUri` output) and the endpoint's log group."""
        log_group = f"/aws/sagemaker/Endpoints/{self.endpoint_name}"
        return [
            *image_lines(image_uri, identity, self.image_name),
            f"- CloudWatch Logs: {log_group}",
            f"    delete: aws logs delete-log-group --log-group-name {log_group} --region {identity.region}",
        ]
