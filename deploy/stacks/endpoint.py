"""Endpoint stack: the GPU tts image (its labels name its torch and CUDA build), the SageMaker model
reading the cache prefix, an endpoint config on `ml.g5.xlarge` with the inference AMI whose driver runs
that CUDA build (deploy/gpu.py), the endpoint, and (when a maximum above the instance count is set)
target tracking on concurrent requests per instance, which counts open bidirectional sessions."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_applicationautoscaling as autoscaling
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from deploy.config import DeployConfig
from deploy.gpu import Ami, is_gpu_instance
from deploy.images import ASSET_EXCLUDES, require_bidi_label
from deploy.naming import VARIANT_NAME

CONCURRENCY_METRIC = "SageMakerVariantConcurrentRequestsPerModelHighResolution"


def container_environment(config: DeployConfig, voice: str) -> dict[str, str]:
    """What the container reads (tts/README.md): the torch engine on the model cache's hexgrad layout; a
    GPU instance must use CUDA, not fall back to the CPU."""
    env = {"TTS_VOICE": voice, "TTS_ENGINE": "torch"}
    if is_gpu_instance(config.instance_type):
        env["TTS_PROVIDER"] = "cuda"
    return env


class EndpointStack(Stack):
    def __init__(
        self,
        scope: Construct,
        stack_id: str,
        *,
        config: DeployConfig,
        model_role_arn: str,
        model_data_uri: str,
        default_voice: str,
        ami: Ami | None,
    ):
        super().__init__(scope, stack_id, description=f"{config.model}: SageMaker real-time endpoint")
        if config.tts_image_uri:
            image_uri = config.tts_image_uri
        else:
            require_bidi_label(config.source_dir, config.tts_dockerfile)
            image_uri = ecr_assets.DockerImageAsset(
                self,
                "TtsImage",
                directory=str(config.source_dir),
                file=config.tts_dockerfile,
                platform=ecr_assets.Platform.LINUX_AMD64,
                exclude=list(ASSET_EXCLUDES),
                display_name=f"{config.model} tts image (GPU)",
            ).image_uri
        model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=model_role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image_uri,
                mode="SingleModel",
                environment=container_environment(config, default_voice),
                model_data_source=sagemaker.CfnModel.ModelDataSourceProperty(
                    s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                        s3_uri=model_data_uri, s3_data_type="S3Prefix", compression_type="None"
                    )
                ),
            ),
        )
        endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=VARIANT_NAME,
                    model_name=model.attr_model_name,
                    instance_type=config.instance_type,
                    initial_instance_count=config.instance_count,
                    initial_variant_weight=1.0,
                    container_startup_health_check_timeout_in_seconds=600,
                    model_data_download_timeout_in_seconds=600,
                    inference_ami_version=ami.version if ami else None,
                )
            ],
        )
        endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=config.endpoint_name,
            endpoint_config_name=endpoint_config.attr_endpoint_config_name,
        )
        if config.autoscaling:
            self._add_autoscaling(config, endpoint)
        CfnOutput(self, "EndpointName", value=endpoint.attr_endpoint_name)
        CfnOutput(self, "ImageUri", value=image_uri)

    def _add_autoscaling(self, config: DeployConfig, endpoint: sagemaker.CfnEndpoint) -> None:
        # No RoleARN: Application Auto Scaling then uses its SageMaker service-linked role.
        target = autoscaling.CfnScalableTarget(
            self,
            "ScalableTarget",
            service_namespace="sagemaker",
            resource_id=f"endpoint/{config.endpoint_name}/variant/{VARIANT_NAME}",
            scalable_dimension="sagemaker:variant:DesiredInstanceCount",
            min_capacity=config.instance_count,
            max_capacity=config.max_instance_count,
        )
        target.node.add_dependency(endpoint)
        autoscaling.CfnScalingPolicy(
            self,
            "ConcurrencyScaling",
            policy_name=f"{config.endpoint_name}-concurrency",
            policy_type="TargetTrackingScaling",
            scaling_target_id=target.ref,
            target_tracking_scaling_policy_configuration=autoscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
                # Open sessions per instance: by default the gap-free capacity of a replica, as
                # `python -m benchmarks capacity` measured it (deploy/capacity.py), so new instances come
                # before gaps.
                target_value=config.target_concurrency,
                predefined_metric_specification=autoscaling.CfnScalingPolicy.PredefinedMetricSpecificationProperty(
                    predefined_metric_type=CONCURRENCY_METRIC
                ),
                scale_out_cooldown=Duration.minutes(1).to_seconds(),
                scale_in_cooldown=Duration.minutes(5).to_seconds(),
            ),
        )
