"""Bedrock model IDs and the exact resources a role needs to call them.

A foundation-model ID (`amazon.nova-lite-v1:0`) is called in the deploy region. A cross-region
inference profile (`us.amazon.nova-lite-v1:0`, `global.anthropic...`) is called through the profile,
which then routes to the foundation model in any region of its geography, so the role needs the
profile ARN and the foundation model in every region (`*` also matches the empty region that global
profiles use).
"""

from __future__ import annotations

import re

from deploy.errors import ConfigError

INFERENCE_PROFILE_PREFIXES = frozenset({"us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"})
_MODEL_ID = re.compile(r"[a-z0-9-]+\.[a-z0-9][a-zA-Z0-9._:-]{0,199}")


def validate_model_id(model_id: str) -> None:
    if not _MODEL_ID.fullmatch(model_id or ""):
        raise ConfigError(
            f"{model_id!r} is not a Bedrock model ID; give a foundation-model or inference-profile ID "
            "such as amazon.nova-lite-v1:0 or us.amazon.nova-lite-v1:0"
        )


def split_profile(model_id: str) -> tuple[str | None, str]:
    """(`us`, `amazon.nova-lite-v1:0`) for a cross-region profile ID, (None, model_id) otherwise."""
    validate_model_id(model_id)
    prefix, _, rest = model_id.partition(".")
    if prefix in INFERENCE_PROFILE_PREFIXES and "." in rest:
        return prefix, rest
    return None, model_id


def model_resource_arns(model_id: str, *, partition: str, region: str, account: str) -> list[str]:
    """The ARNs that `bedrock:InvokeModel*` must allow for `model_id`, and nothing wider."""
    profile, base = split_profile(model_id)
    if profile is None:
        return [f"arn:{partition}:bedrock:{region}::foundation-model/{base}"]
    return [
        f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{model_id}",
        f"arn:{partition}:bedrock:*::foundation-model/{base}",
    ]
