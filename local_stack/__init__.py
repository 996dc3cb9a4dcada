"""The whole stack on this machine: the emulator (SageMaker with the real Kokoro container, Bedrock,
and Bedrock AgentCore running the agent as the runtime `voice_agent`), started together and stopped
together. A development tool: outside `agent/`, so the agent image does not carry it.

- `local_stack.stack`: the library. `local_stack()` runs the stack in this process and yields a
  `LocalStack` (the runtime ARN, the agent's own URL, and `env`: the variables that point unmodified
  AWS clients at it). It leaves this process's environment alone: a caller passes `env` to what needs
  it (a child process's environment). The benchmarks and the integration tests use it.
- `local_stack.ask`: one question through the AgentCore hop, the spoken answer written as WAV, then
  both modes compared; run in a child whose environment is the stack's.
- `local_stack.web`: the web page on a port of your choice (a TCP relay to the agent's replica).
- `python -m local_stack` (`local_stack/__main__.py`, what `scripts/demo` runs): the command line.
"""
