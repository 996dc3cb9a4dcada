"""The running container: what the container kit's routes hand a ready model (`app.py`'s
`TTSContainer`), one WebSocket conversation (`session.py`), a job's audio as wire frames
(`streaming.py`), and the loaded model (`model_host.py`)."""
