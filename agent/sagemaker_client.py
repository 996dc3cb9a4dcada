"""The official SageMaker Runtime HTTP/2 client (`aws-sdk-sagemaker-runtime-http2`), configured the
same way against AWS and against the emulator.

Two things the stock client does not do: trust a private CA (its CRT transport reads only the OS trust
store, so `AWS_CA_BUNDLE` is applied by replacing the transport's TLS context), and find credentials
the way boto3 does (its default chain has no container or instance-metadata provider, which AgentCore
and SageMaker hosts use), so credentials come from botocore's provider chain.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import boto3
from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
from awscrt import io as crt_io
from smithy_aws_core.identity import AWSCredentialsIdentity, StaticCredentialsResolver
from smithy_core.aio.interfaces.identity import IdentityResolver
from smithy_core.exceptions import SmithyIdentityError
from smithy_http.aio.crt import AWSCRTHTTPClient, AWSCRTHTTPClientConfig

from agent.config import AgentConfig


class CABundleError(ValueError):
    """AWS_CA_BUNDLE names a file that is not a readable PEM bundle (checked up front: an untrusted
    certificate would otherwise surface only after a long TLS timeout)."""


def check_ca_bundle(path: str) -> None:
    if not Path(path).is_file():
        raise CABundleError(f"AWS_CA_BUNDLE={path} does not exist")
    try:
        ssl.create_default_context(cafile=path)
    except ssl.SSLError as exc:
        raise CABundleError(f"AWS_CA_BUNDLE={path} is not a PEM certificate bundle: {exc}") from exc


class CRTTransport(AWSCRTHTTPClient):
    """The CRT HTTP/2 transport, trusting `ca_bundle` instead of the OS store when one is given."""

    def __init__(self, ca_bundle: str | None = None) -> None:
        super().__init__(client_config=AWSCRTHTTPClientConfig(force_http_2=True))
        if ca_bundle:
            check_ca_bundle(ca_bundle)
            options = crt_io.TlsContextOptions()
            options.override_default_trust_store_from_path(ca_filepath=ca_bundle)
            self._tls_ctx = crt_io.ClientTlsContext(options)

    def __deepcopy__(self, memo: Any) -> CRTTransport:
        return self  # the stock copy would drop the TLS context


class MissingCredentials(RuntimeError):
    """No AWS credentials anywhere botocore looks. Checked when the client is built: the official
    client would otherwise fail inside a background task and leave the call waiting forever."""


class BotocoreCredentialsResolver(IdentityResolver[AWSCredentialsIdentity, Any]):
    """Credentials from botocore's full provider chain (env, files, SSO, container, instance metadata)."""

    def __init__(self, session: boto3.Session | None = None) -> None:
        self._session = session or boto3.Session()

    async def get_identity(self, *, properties: Any) -> AWSCredentialsIdentity:
        credentials = self._session.get_credentials()
        if credentials is None:
            raise SmithyIdentityError(
                "no AWS credentials found (environment, config files, container or IMDS)"
            )
        frozen = credentials.get_frozen_credentials()
        return AWSCredentialsIdentity(
            access_key_id=frozen.access_key, secret_access_key=frozen.secret_key, session_token=frozen.token
        )


async def bidirectional_client(
    config: AgentConfig, credentials: AWSCredentialsIdentity | None = None
) -> AsyncSageMakerRuntimeHTTP2Client:
    """The client for `config`'s endpoint, region and CA; `credentials` pins static keys (tests,
    benchmarks), otherwise botocore's provider chain supplies them."""
    if credentials is None and boto3.Session().get_credentials() is None:
        raise MissingCredentials("no AWS credentials found (environment, config files, container or IMDS)")
    resolver = StaticCredentialsResolver(credentials) if credentials else BotocoreCredentialsResolver()
    client_config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
        endpoint_uri=config.sagemaker_endpoint_uri,
        region=config.region,
        aws_credentials_identity_resolver=resolver,
        transport=CRTTransport(config.ca_bundle),
    )
    return AsyncSageMakerRuntimeHTTP2Client(config=client_config)
