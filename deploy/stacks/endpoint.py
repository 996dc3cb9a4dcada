"""Endpoint stack, one per SageMaker endpoint (Kokoro's, which speaks, and Whisper's, which listens): the
GPU image (its labels name its library's CUDA build), the SageMaker model (reading the model cache's
prefix when it has one), an endpoint config on `ml.g5.xlarge` with the inference AMI whose driver runs
that CUDA build (deploy/gpu.py) and least-outstanding-requests routing, the endpoint, and (when a maximum
above the instance count is set) target tracking on concurrent requests per instance, which counts open
bidirectional sessions. What differs between the two endpoints is an `EndpointSpec`, which each part
makes (deploy/parts/)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_applicationautoscaling as autoscaling
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from deploy.config import EndpointSettings
from deploy.gpu import Ami, is_gpu_instance
from deploy.images import ASSET_EXCLUDES, require_bidi_label
from deploy.naming import VARIANT_NAME
from deploy.stacks.base import ModelData

CONCURRENCY_METRIC = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
# A speech session holds its instance for a whole answer (tts) or conversation (stt), and SageMaker's
# default routing (RANDOM) can send a new one to an instance already serving several while another sits
# idle; least outstanding requests sends it to the instance with the fewest sessions in flight.
ROUTING_STRATEGY = "LEAST_OUTSTANDING_REQUESTS"


def tts_environment(settings: EndpointSettings, voice: str, lexicon: str | None = None) -> dict[str, str]:
    """What the tts container reads (tts/README.md): the torch engine on the model cache's hexgrad layout,
    the lexicon file there when the model has one; a GPU instance must use CUDA, not fall back to the
    CPU."""
    env = {"TTS_VOICE": voice, "TTS_ENGINE": "torch"}
    if lexicon is not None:
        env["TTS_LEXICON"] = lexicon
    if is_gpu_instance(settings.instance_type):
        env["TTS_PROVIDER"] = "cuda"
    return env


def stt_environment(settings: EndpointSettings) -> dict[str, str]:
    """What the stt container reads (stt/README.md): its device, said either way, since the GPU image's
    default is cuda. A GPU instance must use CUDA, not fall back to the CPU (Whisper base int8 took
    650-1,050 ms a decode on two CPU cores, `python -m benchmarks listen`); a CPU instance gets the CPU."""
    return {"STT_DEVICE": "cuda" if is_gpu_instance(settings.instance_type) else "cpu"}


@dataclass(frozen=True)
class EndpointSpec:
    """One endpoint, as its part makes it: the settings asked for, the container's environment and model
    data, and the AMI its instances run."""

    settings: EndpointSettings
    environment: dict[str, str]
    ami: Ami | None
    model_data: ModelData | None = None
    """Read into /opt/ml/model before the container starts; None: the weights are in the image."""


class EndpointStack(Stack):
    def __init__(
        self, scope: Construct, stack_id: str, *, spec: EndpointSpec, source_dir: Path, model_role_arn: str
    ):
        settings = spec.settings
        super().__init__(scope, stack_id, description=f"{settings.name}: SageMaker real-time endpoint")
        if settings.image_uri:
            image_uri = settings.image_uri
        else:
            dockerfile = settings.image.dockerfile
            require_bidi_label(source_dir, dockerfile)
            image_uri = ecr_assets.DockerImageAsset(
                self,
                "Image",
                directory=str(source_dir),
                file=dockerfile,
                platform=ecr_assets.Platform.LINUX_AMD64,
                exclude=list(ASSET_EXCLUDES),
                display_name=f"{settings.name} image ({dockerfile})",
            ).image_uri
        model_data = None
        if spec.model_data is not None:
            model_data = sagemaker.CfnModel.ModelDataSourceProperty(
                s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                    s3_uri=spec.model_data.uri, s3_data_type="S3Prefix", compression_type="None"
                )
            )
        model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=model_role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image_uri,
                mode="SingleModel",
                environment=spec.environment,
                model_data_source=model_data,
            ),
        )
        endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=VARIANT_NAME,
                    model_name=model.attr_model_name,
                    instance_type=settings.instance_type,
                    initial_instance_count=settings.instance_count,
                    initial_variant_weight=1.0,
                    container_startup_health_check_timeout_in_seconds=600,
                    model_data_download_timeout_in_seconds=600,
                    inference_ami_version=spec.ami.version if spec.ami else None,
                    routing_config=sagemaker.CfnEndpointConfig.RoutingConfigProperty(
                        routing_strategy=ROUTING_STRATEGY
                    ),
                )
            ],
        )
        endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=settings.name,
            endpoint_config_name=endpoint_config.attr_endpoint_config_name,
        )
        if settings.autoscaling:
            self._add_autoscaling(settings, endpoint)
        CfnOutput(self, "EndpointName", value=endpoint.attr_endpoint_name)
        CfnOutput(self, "ImageUri", value=image_uri)

    def _add_autoscaling(self, settings: EndpointSettings, endpoint: sagemaker.CfnEndpoint) -> None:
        # No RoleARN: Application Auto Scaling then uses its SageMaker service-linked role.
        target = autoscaling.CfnScalableTarget(
            self,
            "ScalableTarget",
            service_namespace="sagemaker",
            resource_id=f"endpoint/{settings.name}/variant/{VARIANT_NAME}",
            scalable_dimension="sagemaker:variant:DesiredInstanceCount",
            min_capacity=settings.instance_count,
            max_capacity=settings.max_instance_count,
        )
        target.node.add_dependency(endpoint)
        autoscaling.CfnScalingPolicy(
            self,
            "ConcurrencyScaling",
            policy_name=f"{settings.name}-concurrency",
            policy_type="TargetTrackingScaling",
            scaling_target_id=target.ref,
            target_tracking_scaling_policy_configuration=autoscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
                # Open sessions per instance: for tts by default the gap-free capacity of a replica, as
                # `python -m benchmarks capacity` measured it (deploy/capacity.py), so new instances come
                # before gaps; for stt the figure given (DeployConfig.stt_target_concurrency).
                target_value=settings.target_concurrency,
                predefined_metric_specification=autoscaling.CfnScalingPolicy.PredefinedMetricSpecificationProperty(
                    predefined_metric_type=CONCURRENCY_METRIC
                ),
                scale_out_cooldown=Duration.minutes(1).to_seconds(),
                scale_in_cooldown=Duration.minutes(5).to_seconds(),
            ),
        )
