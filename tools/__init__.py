"""Client tools, not shipped in any image: the demo that talks to a running agent (`demo.py`, what
`agent-infra demo` runs), the model of what a listener hears (`listener.py`), the one client session loop
over the container's WebSocket or the SageMaker stream (`tts_client.py`), the offline ASR judge
(`asr.py`) and the streamed-audio fidelity measures (`fidelity.py`). Used by deploy (as a command), the
local stack, the benchmarks and the tests; they may import the shipped packages, which never import
them."""
