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


def test_turn_taking_settings_read_lists_numbers_and_off(monkeypatch):
    import pytest

    defaults = AgentConfig.from_env()
    assert "mm-hmm" in defaults.backchannels and defaults.preempt_complete == 0.2
    monkeypatch.setenv("AGENT_BACKCHANNELS", " Yeah , uh-huh,,")
    monkeypatch.setenv("AGENT_PREEMPT_COMPLETE", "0.35")
    config = AgentConfig.from_env()
    assert (config.backchannels, config.preempt_complete) == (("yeah", "uh-huh"), 0.35)
    monkeypatch.setenv("AGENT_BACKCHANNELS", "off")
    monkeypatch.setenv("AGENT_PREEMPT_COMPLETE", "off")
    assert (AgentConfig.from_env().backchannels, AgentConfig.from_env().preempt_complete) == (None, None)
    monkeypatch.setenv("AGENT_PREEMPT_COMPLETE", "1.5")
    with pytest.raises(ValueError, match="AGENT_PREEMPT_COMPLETE"):
        AgentConfig.from_env()
