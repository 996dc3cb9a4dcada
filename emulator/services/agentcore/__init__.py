"""Bedrock AgentCore Runtime: the control plane (agent runtimes and their endpoints, `control.py` over
`shapes.py`) and the data plane (InvokeAgentRuntime, the agent's SSE passed through as it arrives,
`runtime.py`)."""
