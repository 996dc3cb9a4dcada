"""What the container says on the wire: its messages and error codes (`protocol.py`), the SSE codec
(`sse.py`), the audio encoders (`encoders.py`) and the audio facts the wire needs (`audio.py`).
Import-free: the agent image copies `sse.py` with this file."""
