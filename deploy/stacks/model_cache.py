"""Model cache stack: a private, encrypted, TLS-only S3 bucket holding an endpoint's weights and voices
under its model prefix (`models/<endpoint>/`), which SageMaker copies to `/opt/ml/model` before the
container starts.

The bucket and its objects outlive `destroy` (RETAIN): the weights take a while to upload and cost
cents to keep; the destroy command prints how to delete them.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import CfnOutput, RemovalPolicy, Size, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from deploy.model_dir import ModelSource
from deploy.product import Endpoint


@dataclass(frozen=True)
class ModelData:
    """Where a model's data is read from: the cache bucket and the key prefix (ends in `/`, as S3Prefix
    requires)."""

    bucket: s3.IBucket
    prefix: str

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket.bucket_name}/{self.prefix}"


class ModelCacheStack(Stack):
    def __init__(self, scope: Construct, stack_id: str, *, endpoint: Endpoint, model: ModelSource):
        super().__init__(scope, stack_id, description=f"{endpoint.name}: model weights and voices in S3")
        self.bucket = s3.Bucket(
            self,
            "ModelBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            versioned=False,
            removal_policy=RemovalPolicy.RETAIN,
        )
        # The sync Lambda unzips the upload in /tmp: room for the archive and the files side by side.
        s3deploy.BucketDeployment(
            self,
            "ModelSync",
            sources=[s3deploy.Source.asset(str(model.directory))],
            destination_bucket=self.bucket,
            destination_key_prefix=endpoint.model_prefix,
            memory_limit=1024,
            ephemeral_storage_size=Size.gibibytes(4),
            retain_on_delete=True,
        )
        self.model_data = ModelData(self.bucket, endpoint.model_prefix)
        CfnOutput(self, "BucketName", value=self.bucket.bucket_name)
        CfnOutput(self, "ModelDataUri", value=self.model_data.uri)
