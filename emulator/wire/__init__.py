"""The wire formats every service shares: the AWS event-stream codec, WebSocket frames, SigV4 and its one
check, the AWS error envelopes, the local TLS CA, and the fidelity knobs (latency, re-chunking).
Depends only on emulator.config."""
