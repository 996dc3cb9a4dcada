"""The SageMaker faces: the control plane (awsJson1.1), the runtime (InvokeEndpoint and the response
stream, HTTP/1.1), the bidirectional stream (HTTP/2 event stream <-> container WebSocket), and their
errors. A face imports the controller and the wire formats, never another face."""
