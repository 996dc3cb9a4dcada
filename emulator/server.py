"""Run the emulator in-process: one Hypercorn server with two listeners, plus the controller.

Python API (what tests and the agent's integration tests use):

```python
from emulator.config import EmulatorConfig
from emulator.manifest import load_manifest
from emulator.server import run_emulator, emulator_in_thread

config = EmulatorConfig(http_port=0, h2_port=0)       # 0: free ports
async with run_emulator(config, load_manifest("compose/emulator.yaml")) as emu:
    emu.env            # AWS_ENDPOINT_URL_SAGEMAKER..., AWS_CA_BUNDLE, AWS_REGION, credentials
    emu.http_url, emu.h2_url, emu.tls.ca

with emulator_in_thread(config, manifest) as emu:   # for synchronous callers (boto3 in a test)
    ...
```

`run_emulator` creates the manifest's resources through the control-plane code, waits until its
endpoints are InService (raising `EmulatorStartError` with the FailureReason if one fails), and on
exit stops every replica it started. Ports 0 pick free ports; `emu.env` has the real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
from hypercorn.asyncio import serve
from hypercorn.config import Config as HypercornConfig

from emulator import hypercorn_fixes
from emulator.app import Services, create_app
from emulator.awserrors import AwsError
from emulator.config import EmulatorConfig
from emulator.control_plane import ControlPlane
from emulator.controller import Controller
from emulator.manifest import Manifest
from emulator.routing import Router
from emulator.runtimes import make_runtime
from emulator.state import Store
from emulator.tls import TlsFiles, ensure_tls


class EmulatorStartError(RuntimeError):
    """The manifest could not be applied, or an endpoint did not reach InService."""


def _listen(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise EmulatorStartError(f"cannot listen on {host}:{port}: {exc}") from exc
    sock.listen(512)
    return sock


class Emulator:
    """A running emulator."""

    def __init__(self, services: Services, tls: TlsFiles, http_port: int, h2_port: int) -> None:
        self.services = services
        self.config = services.config
        self.store = services.store
        self.control_plane = services.control_plane
        self.tls = tls
        self.http_url = f"http://{self.config.host}:{http_port}"
        self.h2_url = f"https://{self.config.tls_hostname}:{h2_port}"

    @property
    def env(self) -> dict[str, str]:
        """The variables that point unmodified AWS clients at this emulator."""
        akid, secret = next(iter(self.config.sigv4_keys.items()), ("test", "test"))
        return {
            "AWS_ENDPOINT_URL_SAGEMAKER": self.http_url,
            "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": self.http_url,
            "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": self.h2_url,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": self.http_url,
            "AWS_CA_BUNDLE": str(self.tls.ca),
            "AWS_REGION": self.config.region,
            "AWS_DEFAULT_REGION": self.config.region,
            "AWS_ACCESS_KEY_ID": akid,
            "AWS_SECRET_ACCESS_KEY": secret,
        }

    def info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "http_url": self.http_url,
            "h2_url": self.h2_url,
            "ca": str(self.tls.ca),
            "runtime": self.config.runtime,
            "region": self.config.region,
        }

    def apply(self, manifest: Manifest) -> None:
        """Create the manifest's resources, in order, through the control-plane operations."""
        operations = self.control_plane.operations()
        for resource in manifest.resources:
            try:
                operations[resource.operation](resource.spec)
            except AwsError as err:
                raise EmulatorStartError(
                    f"{manifest.source}: {resource.kind} {resource.name}: {err.message}"
                ) from err

    async def wait_in_service(self, names: list[str], limit_s: float | None = None) -> None:
        """Wait until every named endpoint is InService; raise EmulatorStartError if one fails."""
        limit = limit_s if limit_s is not None else self.config.startup_timeout_s + 30
        deadline = time.monotonic() + limit
        while True:
            states = {name: self.store.endpoints.get(name) for name in names}
            for name, ep in states.items():
                if ep is None:
                    raise EmulatorStartError(f"endpoint {name} does not exist")
                if ep.status == "Failed":
                    raise EmulatorStartError(f"endpoint {name} failed: {ep.failure_reason}")
            if all(ep is not None and ep.status == "InService" for ep in states.values()):
                return
            if time.monotonic() > deadline:
                raise EmulatorStartError(f"endpoints {names} not InService after {limit:g} s")
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def run_emulator(
    config: EmulatorConfig | None = None, manifest: Manifest | None = None, *, wait: bool = True
) -> AsyncIterator[Emulator]:
    config = config or EmulatorConfig.from_env()
    manifest = manifest or Manifest()
    if manifest.images:
        config = dataclasses.replace(config, images={**config.images, **manifest.images})
    home = config.home_dir
    home.mkdir(parents=True, exist_ok=True)
    tls = await asyncio.to_thread(ensure_tls, home)
    runtime = make_runtime(config)
    await runtime.check()

    http_sock = _listen(config.host, config.http_port)
    try:
        h2_sock = _listen(config.host, config.h2_port)
    except EmulatorStartError:
        http_sock.close()
        raise
    http_port, h2_port = http_sock.getsockname()[1], h2_sock.getsockname()[1]

    store = Store()
    client = httpx.AsyncClient(trust_env=False, timeout=config.invoke_timeout_s)
    controller = Controller(config, store, runtime, client)
    emulator: Emulator | None = None
    services = Services(
        config=config,
        store=store,
        runtime=runtime,
        control_plane=ControlPlane(config, store, runtime, controller),
        router=Router(store, config.account_id),
        http=client,
        info=lambda: emulator.info() if emulator is not None else {},
    )
    emulator = Emulator(services, tls, http_port, h2_port)

    hypercorn_fixes.apply()
    hyper = HypercornConfig()
    hyper.bind = [f"fd://{h2_sock.detach()}"]
    hyper.insecure_bind = [f"fd://{http_sock.detach()}"]
    hyper.certfile = str(tls.cert_chain)
    hyper.keyfile = str(tls.key)
    hyper.graceful_timeout = 1.0
    hyper.keep_alive_timeout = 75.0
    hyper.accesslog = None
    hyper.errorlog = logging.getLogger("hypercorn.error")  # the process's logging config decides where
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    server = loop.create_task(serve(create_app(services), hyper, shutdown_trigger=stop.wait))
    reconciler = loop.create_task(controller.run())
    try:
        emulator.apply(manifest)
        if wait and manifest.endpoints:
            await emulator.wait_in_service(manifest.endpoints)
        yield emulator
    finally:
        reconciler.cancel()
        await controller.shutdown()
        stop.set()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            async with asyncio.timeout(5):
                await server
        server.cancel()
        await client.aclose()


@contextlib.contextmanager
def emulator_in_thread(
    config: EmulatorConfig | None = None, manifest: Manifest | None = None, *, timeout: float = 600
) -> Iterator[Emulator]:
    """Run the emulator on its own event loop in a thread, for synchronous callers (boto3)."""
    started = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        box["stop"] = asyncio.Event()
        box["loop"] = asyncio.get_running_loop()
        try:
            async with run_emulator(config, manifest) as emu:
                box["emulator"] = emu
                started.set()
                await box["stop"].wait()
        except Exception as exc:
            box["error"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=lambda: asyncio.run(main()), name="emulator", daemon=True)
    thread.start()
    started.wait(timeout)
    if "emulator" not in box:
        thread.join(30)
        raise EmulatorStartError(f"the emulator did not start: {box.get('error', 'timeout')!r}") from box.get(
            "error"
        )
    try:
        yield box["emulator"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(timeout)
