"""The agent's one configuration object reads the variables the emulator prints."""

from agent.config import AgentConfig


def test_config_reads_the_emulator_variables(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2", "https://localhost:8443")
    monkeypatch.setenv("AWS_CA_BUNDLE", "/tmp/ca.pem")
    config = AgentConfig.from_env()
    assert config.sagemaker_endpoint_uri == "https://localhost:8443"
    assert (config.region, config.ca_bundle) == ("eu-west-1", "/tmp/ca.pem")
    monkeypatch.delenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2")
    assert (
        AgentConfig.from_env().sagemaker_endpoint_uri
        == "https://runtime.sagemaker.eu-west-1.amazonaws.com:8443"
    )
