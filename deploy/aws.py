"""boto3 clients for the deploy commands, with short timeouts so a bad network is an error, not a hang.

`endpoint_url` points every client at a local stand-in (moto's server, the emulator's control plane);
it is None for AWS itself, where boto3 also honours `AWS_ENDPOINT_URL`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

_CLIENT_CONFIG = Config(connect_timeout=10, read_timeout=60, retries={"max_attempts": 3, "mode": "standard"})


@dataclass(frozen=True)
class Aws:
    region: str | None = None
    endpoint_url: str | None = None
    _session: boto3.Session = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # AWS_REGION first, as the AWS CLI v2 and the other SDKs do (botocore reads only AWS_DEFAULT_REGION).
        region = self.region or os.environ.get("AWS_REGION") or None
        object.__setattr__(self, "_session", boto3.Session(region_name=region))

    @property
    def session(self) -> boto3.Session:
        return self._session

    @property
    def resolved_region(self) -> str | None:
        """The region boto3 will use: the given one, else the environment's or the profile's."""
        return self._session.region_name

    def client(self, service: str) -> Any:
        return self._session.client(service, endpoint_url=self.endpoint_url, config=_CLIENT_CONFIG)
