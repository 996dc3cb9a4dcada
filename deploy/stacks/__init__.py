"""The CDK stacks (aws-cdk-lib, the `cdk` extra); imported only by `deploy.app`."""
