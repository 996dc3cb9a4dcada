"""An endpoint's two stacks, one pair per SageMaker endpoint of the product (Kokoro's, which speaks, and
Whisper's, which listens; deploy/parts/endpoint.py makes them):

- `ModelRoleStack` (`<family>-<endpoint>-Base`): the SageMaker execution role of the endpoint's model
  (deploy/stacks/iam.py says what it may).
- `EndpointStack` (`...-Endpoint`): the GPU image (its labels name its library's CUDA build), the
  SageMaker model (reading the model cache's prefix when it has one), an endpoint config with the
  definition's instance type, variant and routing and the inference AMI whose driver runs that CUDA
  build (deploy/gpu.py), the endpoint, and (when a maximum above the instance count is set) target
  tracking on concurrent requests per instance, which counts open bidirectional sessions.

What differs between the two endpoints is an `EndpointSpec`, which the part makes from the definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_applicationautoscaling as autoscaling
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from deploy.config import EndpointSettings
from deploy.gpu import Ami
from deploy.images import ASSET_EXCLUDES, require_bidi_label
from deploy.stacks.iam import log_group_arn, metrics_statement, pull_statements
from deploy.stacks.model_cache import ModelData

CONCURRENCY_METRIC = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
LOG_ACTIONS = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]


def read_model_statements(model_data: ModelData | None) -> list[iam.PolicyStatement]:
    """Listing and reading the model's prefix of the cache bucket, when it has one."""
    if model_data is None:
        return []
    bucket, prefix = model_data.bucket, model_data.prefix
    return [
        iam.PolicyStatement(
            sid="ListModelPrefix",
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
        ),
        iam.PolicyStatement(
            sid="ReadModel", actions=["s3:GetObject"], resources=[bucket.arn_for_objects(f"{prefix}*")]
        ),
    ]


class ModelRoleStack(Stack):
    """The SageMaker execution role of one endpoint's model (`model_data`: the prefix it reads, if any)."""

    def __init__(
        self,
        scope: Construct,
        stack_id: str,
        *,
        settings: EndpointSettings,
        model_data: ModelData | None = None,
    ):
        model = settings.definition.name
        super().__init__(scope, stack_id, description=f"{model}: SageMaker model execution role")
        log_group = f"/aws/sagemaker/Endpoints/{settings.name}"
        document = iam.PolicyDocument(
            statements=[
                *pull_statements(self, settings.image_uri),
                *read_model_statements(model_data),
                iam.PolicyStatement(
                    sid="EndpointLogs",
                    actions=LOG_ACTIONS,
                    resources=[log_group_arn(self, log_group), log_group_arn(self, f"{log_group}:*")],
                ),
                metrics_statement(
                    "EndpointMetrics", {"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}}
                ),
            ]
        )
        self.model_role = iam.Role(
            self,
            "ModelRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description=f"SageMaker runs the {model} container with this role",
            inline_policies={"SpeechModel": document},
        )
        CfnOutput(self, "ModelRoleArn", value=self.model_role.role_arn)


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
        image_uri = self._image(settings, source_dir)
        model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=model_role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image_uri,
                mode="SingleModel",
                environment=spec.environment,
                model_data_source=self._model_data(spec.model_data),
            ),
        )
        endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=settings.name,
            endpoint_config_name=self._config(spec, model).attr_endpoint_config_name,
        )
        if settings.autoscaling:
            self._add_autoscaling(settings, endpoint)
        CfnOutput(self, "EndpointName", value=endpoint.attr_endpoint_name)
        CfnOutput(self, "ImageUri", value=image_uri)

    def _image(self, settings: EndpointSettings, source_dir: Path) -> str:
        """The given image URI, else the GPU image built from its Dockerfile (which must carry the label)."""
        if settings.image_uri:
            return settings.image_uri
        dockerfile = settings.image.dockerfile
        require_bidi_label(source_dir, dockerfile)
        return ecr_assets.DockerImageAsset(
            self,
            "Image",
            directory=str(source_dir),
            file=dockerfile,
            platform=ecr_assets.Platform.LINUX_AMD64,
            exclude=list(ASSET_EXCLUDES),
            display_name=f"{settings.name} image ({dockerfile})",
        ).image_uri

    @staticmethod
    def _model_data(data: ModelData | None) -> sagemaker.CfnModel.ModelDataSourceProperty | None:
        if data is None:
            return None
        return sagemaker.CfnModel.ModelDataSourceProperty(
            s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                s3_uri=data.uri, s3_data_type="S3Prefix", compression_type="None"
            )
        )

    def _config(self, spec: EndpointSpec, model: sagemaker.CfnModel) -> sagemaker.CfnEndpointConfig:
        settings, definition = spec.settings, spec.settings.definition
        variant = sagemaker.CfnEndpointConfig.ProductionVariantProperty(
            variant_name=definition.variant,
            model_name=model.attr_model_name,
            instance_type=settings.instance_type,
            initial_instance_count=settings.instance_count,
            initial_variant_weight=1.0,
            container_startup_health_check_timeout_in_seconds=600,
            model_data_download_timeout_in_seconds=600,
            inference_ami_version=spec.ami.version if spec.ami else None,
            routing_config=sagemaker.CfnEndpointConfig.RoutingConfigProperty(
                routing_strategy=definition.routing
            ),
        )
        return sagemaker.CfnEndpointConfig(self, "EndpointConfig", production_variants=[variant])

    def _add_autoscaling(self, settings: EndpointSettings, endpoint: sagemaker.CfnEndpoint) -> None:
        # No RoleARN: Application Auto Scaling then uses its SageMaker service-linked role.
        target = autoscaling.CfnScalableTarget(
            self,
            "ScalableTarget",
            service_namespace="sagemaker",
            resource_id=f"endpoint/{settings.name}/variant/{settings.definition.variant}",
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
