"""The running container: the ASGI routes (`app.py`), one WebSocket conversation (`session.py`), a
job's audio as wire frames (`streaming.py`), and the loaded model (`model_host.py`)."""
