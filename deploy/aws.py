"""boto3 clients for the deploy commands, with short timeouts so a bad network is an error, not a hang.

`endpoint_url` points every client at one local stand-in (moto's server); `endpoints` points each
service at its own (the emulator's, by boto3's `AWS_ENDPOINT_URL_<SERVICE>` names, `emulator_clients`),
with the `credentials` that go with them, passed to boto3 explicitly: nothing here reads or changes the
process environment beyond what boto3 itself reads. Both are empty for AWS itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session
from botocore.config import Config

_CLIENT_CONFIG = Config(connect_timeout=10, read_timeout=60, retries={"max_attempts": 3, "mode": "standard"})


ENDPOINT_PREFIX = "AWS_ENDPOINT_URL_"


def endpoint_variable(service: str) -> str:
    """boto3's variable for a service's endpoint: `cloudformation` -> AWS_ENDPOINT_URL_CLOUDFORMATION,
    `application-autoscaling` -> AWS_ENDPOINT_URL_APPLICATION_AUTO_SCALING (from its service id)."""
    service_id = botocore.session.get_session().get_service_model(service).service_id
    return ENDPOINT_PREFIX + str(service_id).replace(" ", "_").replace("-", "_").upper()


@dataclass(frozen=True)
class Aws:
    region: str | None = None
    endpoint_url: str | None = None
    endpoints: Mapping[str, str] = field(default_factory=dict)
    """boto3's `AWS_ENDPOINT_URL_<SERVICE>` name -> URL: each service's own stand-in."""
    credentials: tuple[str, str] | None = None
    """(access key id, secret) given with `endpoints`; None: boto3's own chain."""
    _session: boto3.Session = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # AWS_REGION first, as the AWS CLI v2 and the other SDKs do (botocore reads only AWS_DEFAULT_REGION).
        region = self.region or os.environ.get("AWS_REGION") or None
        keys = {}
        if self.credentials is not None:
            keys = {"aws_access_key_id": self.credentials[0], "aws_secret_access_key": self.credentials[1]}
        object.__setattr__(self, "_session", boto3.Session(region_name=region, **keys))

    @classmethod
    def from_variables(cls, env: Mapping[str, str]) -> Aws:
        """Clients for the stand-in that `env` describes (what `python -m emulator env --json` prints):
        its region, credentials and every `AWS_ENDPOINT_URL_<SERVICE>`."""
        credentials = None
        if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
            credentials = (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"])
        endpoints = {name: url for name, url in env.items() if name.startswith(ENDPOINT_PREFIX)}
        return cls(region=env.get("AWS_REGION") or None, endpoints=endpoints, credentials=credentials)

    @property
    def session(self) -> boto3.Session:
        return self._session

    @property
    def resolved_region(self) -> str | None:
        """The region boto3 will use: the given one, else the environment's or the profile's."""
        return self._session.region_name

    def client(self, service: str) -> Any:
        url = self.endpoints.get(endpoint_variable(service), self.endpoint_url) if self.endpoints else None
        return self._session.client(service, endpoint_url=url or self.endpoint_url, config=_CLIENT_CONFIG)
