"""The container kit: what every SageMaker model container of this repository is built from, so that a
fix to one is a fix to all (tts/ speaks, stt/ listens; a third model container is one more package on it).

- `app.py`: the Starlette app, assembled from the kit's routes around a container's `Container`
  (`container.py`), and the lifespan that loads the model off the event loop.
- `routes.py`: `GET /ping`, `POST /invocations`, `WS /invocations-bidirectional-stream`: the readiness
  gate of each, then the container's own handler.
- `errors.py`: typed JSON errors, and the code -> HTTP status table (the kit's codes and a container's).
- `body.py`: a request body read as a stream and refused as soon as it is over its limit.
- `settings.py`: a container's config object read from its environment variables, with clear errors.
- `command.py`: `python -m <package> serve` (host, port, log level, uvicorn).
- `__main__.py` and `Dockerfile`: one image pattern for every container's CPU image, parameterized by
  build arguments (`PACKAGE=tts|stt`, ...).

The kit imports nothing of the containers: each hands it what is its own (its engines, wire protocol,
session, config fields and weights).
"""
