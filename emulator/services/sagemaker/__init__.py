"""SageMaker: the control plane (awsJson1.1, `control.py` over `shapes.py`), the runtime (InvokeEndpoint
and the response stream, HTTP/1.1, `runtime.py`), the bidirectional stream (HTTP/2 event stream <->
container WebSocket, `bidirectional.py`), their errors (`errors.py`) and routes (`routes.py`)."""
