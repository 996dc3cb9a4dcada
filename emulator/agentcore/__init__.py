"""The Bedrock AgentCore faces: the control plane (agent runtimes and their endpoints), the data plane
(InvokeAgentRuntime, the agent's SSE passed through as it arrives), and the STS and CloudFormation calls
`agent-infra status|destroy` make."""
