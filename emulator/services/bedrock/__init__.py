"""Bedrock Runtime: Converse and ConverseStream (`runtime.py` over `shapes.py`), answered by the reply
models of emulator.llm, and the record of what it answered (`request_log.py`)."""
