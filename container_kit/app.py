"""A container's ASGI app: the kit's routes around the container, and a lifespan that starts loading the
model as the server starts listening and closes the host when it stops."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette

from container_kit.container import Container
from container_kit.routes import ROUTES


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """The model loads in a task (its work in threads, `ModelHost.load`), so the server listens at once."""
    host = app.state.container.host
    loading = asyncio.create_task(host.load())
    yield
    loading.cancel()
    await host.close()


def container_app(container: Container) -> Starlette:
    """The app serving `container`; `state.model_host` is its host, for tests and benchmarks to watch."""
    app = Starlette(routes=ROUTES, lifespan=lifespan)
    app.state.container = container
    app.state.model_host = container.host
    return app
