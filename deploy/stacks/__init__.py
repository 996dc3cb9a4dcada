"""The CDK stacks. aws-cdk-lib is the `cdk` extra: without it, importing this package is a clear error,
while status and destroy (boto3 only) keep working. Import `cdk` from here to get that message."""

from deploy.errors import ConfigError

try:
    import aws_cdk as cdk
except ImportError as exc:
    raise ConfigError(
        "aws-cdk-lib is not installed; install the extra: pip install 'voice-agent-aws[cdk]'"
    ) from exc

__all__ = ["cdk"]
