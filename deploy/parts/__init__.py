"""The deployable parts: the things the product's definition names (deploy/product.py), each by that
name. `base.py` says what a part is; `endpoint.py` is either endpoint (`kokoro-82m`, `whisper-stt`),
`agent_runtime.py` the agent's runtime (`voice_agent`). The orchestration walks them in order
(deploy/orchestrate.py's `parts_of`)."""
