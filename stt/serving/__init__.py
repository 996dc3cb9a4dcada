"""The container's server: the ASGI app, the model host and the WebSocket session."""
