"""The official client as the agent builds it: credentials and the CA bundle are checked up front."""

import pytest

from agent.config import AgentConfig
from agent.sagemaker_client import CABundleError, MissingCredentials, bidirectional_client, check_ca_bundle


async def test_missing_credentials_fail_fast_with_a_typed_error(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(MissingCredentials):
        await bidirectional_client(AgentConfig())


def test_an_unreadable_ca_bundle_is_rejected_up_front(tmp_path):
    with pytest.raises(CABundleError, match="does not exist"):
        check_ca_bundle(str(tmp_path / "missing.pem"))
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a certificate")
    with pytest.raises(CABundleError, match="not a PEM"):
        check_ca_bundle(str(bogus))
