"""The running emulator: one Hypercorn server with two listeners, the controller, and the app
(`app.py`) that serves every emulated service on both.

Python API (what tests, the local stack and the command line use):

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
endpoints are InService and its agent runtimes READY (raising `EmulatorStartError` with the
failure reason if one fails), and on exit stops every replica it started. Ports 0 pick free
ports; `emu.env` has the real ones. `serve` is `python -m emulator up`: the same until SIGINT or
SIGTERM, the emulator recorded in its home meanwhile (`record.py`) and its `export` lines printed once
it is ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config as HypercornConfig

from emulator.config import EmulatorConfig
from emulator.controller.reconcile import Controller
from emulator.controller.runtimes import make_runtime
from emulator.controller.store import Store
from emulator.manifest import Manifest, load_manifest
from emulator.server import hypercorn_fixes
from emulator.server.app import Services, create_app, make_services
from emulator.server.record import export_lines, public_env, read_record, record_path, write_record
from emulator.services.cloudformation.routes import PATH as CLOUDFORMATION_PATH
from emulator.services.sts.routes import PATH as STS_PATH
from emulator.wire.awserrors import AwsError
from emulator.wire.fidelity import Rechunker
from emulator.wire.tls import TlsFiles, ensure_tls


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


def client_env(config: EmulatorConfig, http_url: str, h2_url: str, ca: str) -> dict[str, str]:
    """The variables that point unmodified AWS clients at an emulator (boto3 reads
    `AWS_ENDPOINT_URL_<service id in upper snake case>`)."""
    akid, secret = next(iter(config.sigv4_keys.items()), ("test", "test"))
    return {
        "AWS_ENDPOINT_URL_SAGEMAKER": http_url,
        "AWS_ENDPOINT_URL_APPLICATION_AUTO_SCALING": http_url,
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": http_url,
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": h2_url,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": http_url,
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": http_url,
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL": http_url,
        "AWS_ENDPOINT_URL_STS": f"{http_url}{STS_PATH}",
        "AWS_ENDPOINT_URL_CLOUDFORMATION": f"{http_url}{CLOUDFORMATION_PATH}",
        "AWS_ENDPOINT_URL_CLOUDWATCH": http_url,
        "AWS_CA_BUNDLE": ca,
        "AWS_REGION": config.region,
        "AWS_DEFAULT_REGION": config.region,
        "AWS_ACCESS_KEY_ID": akid,
        "AWS_SECRET_ACCESS_KEY": secret,
    }


class Emulator:
    """A running emulator."""

    def __init__(self, services: Services, tls: TlsFiles, http_url: str, h2_url: str) -> None:
        self.services = services
        self.config = services.config
        self.store = services.store
        self.tls = tls
        self.http_url = http_url
        self.h2_url = h2_url

    @property
    def env(self) -> dict[str, str]:
        """The variables that point unmodified AWS clients at this emulator."""
        return client_env(self.config, self.http_url, self.h2_url, str(self.tls.ca))

    def runtime_arn(self, name: str) -> str:
        """The ARN of the agent runtime named `name` (KeyError if there is none)."""
        for runtime in self.store.agent_runtimes.values():
            if runtime.name == name:
                return runtime.arn
        raise KeyError(name)

    def info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "http_url": self.http_url,
            "h2_url": self.h2_url,
            "ca": str(self.tls.ca),
            "runtime": self.config.runtime,
            "region": self.config.region,
            "rechunk": Rechunker(self.config.rechunk, self.config.rechunk_seed).describe(),
        }

    def apply(self, manifest: Manifest) -> None:
        """Create the manifest's resources, in order, through the control-plane operations."""
        for resource in manifest.resources:
            try:
                self.services.call(resource.service, resource.operation, resource.spec)
            except AwsError as err:
                raise EmulatorStartError(
                    f"{manifest.source}: {resource.kind} {resource.name}: {err.message}"
                ) from err

    async def wait_in_service(self, manifest: Manifest, limit_s: float | None = None) -> None:
        """Wait until the manifest's endpoints are InService and its agent runtimes READY, then until the
        local model behind Bedrock has loaded when an agent runtime started its load (after the
        endpoints: `Services.preload_reply_model`); raise EmulatorStartError if one fails."""
        limit = limit_s if limit_s is not None else self.config.startup_timeout_s + 30
        deadline = time.monotonic() + limit
        while True:
            states = {f"endpoint {name}": self._endpoint_state(name) for name in manifest.endpoints}
            states |= {f"agent runtime {name}": self._runtime_state(name) for name in manifest.agent_runtimes}
            for what, (state, reason) in states.items():
                if state is None:
                    raise EmulatorStartError(f"{what} does not exist")
                if state in {"Failed", "CREATE_FAILED"}:
                    raise EmulatorStartError(f"{what} failed: {reason}")
            if all(state in {"InService", "READY"} for state, _ in states.values()):
                break
            if time.monotonic() > deadline:
                raise EmulatorStartError(f"{', '.join(states)} not all ready after {limit:g} s")
            await asyncio.sleep(0.05)
        await self.services.reply_model_loaded(max(0.0, deadline - time.monotonic()))

    def _endpoint_state(self, name: str) -> tuple[str | None, str | None]:
        ep = self.store.endpoints.get(name)
        return (ep.status, ep.failure_reason) if ep is not None else (None, None)

    def _runtime_state(self, name: str) -> tuple[str | None, str | None]:
        for runtime in self.store.agent_runtimes.values():
            if runtime.name == name:
                return runtime.status, runtime.failure_reason
        return None, None


def _hypercorn_config(http_sock: socket.socket, h2_sock: socket.socket, tls: TlsFiles) -> HypercornConfig:
    """One server on both listeners: plain HTTP/1.1, and h2 over TLS (the bidirectional stream)."""
    hyper = HypercornConfig()
    hyper.bind = [f"fd://{h2_sock.detach()}"]
    hyper.insecure_bind = [f"fd://{http_sock.detach()}"]
    hyper.certfile = str(tls.cert_chain)
    hyper.keyfile = str(tls.key)
    hyper.graceful_timeout = 1.0
    hyper.keep_alive_timeout = 75.0
    hyper.accesslog = None
    hyper.errorlog = logging.getLogger("hypercorn.error")  # the process's logging config decides where
    return hyper


def _listeners(config: EmulatorConfig) -> tuple[socket.socket, socket.socket]:
    http_sock = _listen(config.host, config.http_port)
    try:
        return http_sock, _listen(config.host, config.h2_port)
    except EmulatorStartError:
        http_sock.close()
        raise


@contextlib.asynccontextmanager
async def run_emulator(
    config: EmulatorConfig | None = None, manifest: Manifest | None = None, *, wait: bool = True
) -> AsyncIterator[Emulator]:
    config = config or EmulatorConfig.from_env()
    manifest = manifest or Manifest()
    if manifest.images:
        config = dataclasses.replace(config, images={**config.images, **manifest.images})
    config.home_dir.mkdir(parents=True, exist_ok=True)
    tls = await asyncio.to_thread(ensure_tls, config.home_dir)
    runtime = make_runtime(config)
    await runtime.check()
    http_sock, h2_sock = _listeners(config)
    http_url = f"http://{config.host}:{http_sock.getsockname()[1]}"
    h2_url = f"https://{config.tls_hostname}:{h2_sock.getsockname()[1]}"
    store = Store()
    client = httpx.AsyncClient(trust_env=False, timeout=config.invoke_timeout_s)
    controller = Controller(config, store, runtime, client)
    emulator: Emulator | None = None
    services = make_services(
        config,
        store,
        runtime,
        controller,
        client,
        info=lambda: emulator.info() if emulator is not None else {},
        # AgentCore's observability: each runtime's OpenTelemetry spans go to the emulator's collector.
        platform_env={
            **client_env(config, http_url, h2_url, str(tls.ca)),
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"{http_url}/_emulator/otlp",
        },
    )
    emulator = Emulator(services, tls, http_url, h2_url)
    hypercorn_fixes.apply()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    hyper = _hypercorn_config(http_sock, h2_sock, tls)
    server = loop.create_task(hypercorn_serve(create_app(services), hyper, shutdown_trigger=stop.wait))
    # Once a second: a replica's EMF line is a metric within a second, and the shortest alarm period
    # the emulator is asked for (high resolution, 10 s) is evaluated ten times over.
    tasks = [
        loop.create_task(controller.run()),
        loop.create_task(services.replica_metrics().run(1.0)),
        loop.create_task(services.cloudwatch.run(1.0)),
    ]
    try:
        emulator.apply(manifest)
        if wait:
            await emulator.wait_in_service(manifest)
        yield emulator
    finally:
        for task in tasks:
            task.cancel()
        await controller.shutdown()
        runtime.close()
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
        box["task"] = asyncio.current_task()
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
    try:
        started.wait(timeout)
    except BaseException:
        # Interrupted while starting (Ctrl-C, SIGTERM): stop what has started before going on.
        if "task" in box:
            box["loop"].call_soon_threadsafe(box["task"].cancel)
        thread.join(timeout)
        raise
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


def _record(config: EmulatorConfig, emu: Emulator, ready: bool, manifest: str) -> None:
    env = public_env(config, emu.env)
    write_record(
        config, {**emu.info(), "ready": ready, "manifest": manifest, "env": env, "home": str(config.home_dir)}
    )


async def serve(config: EmulatorConfig, manifest_path: str) -> None:
    """`python -m emulator up`: run the emulator until SIGINT or SIGTERM, recording itself (not ready,
    then ready) meanwhile, and print its `export` lines once the manifest's endpoints are InService and
    its agent runtimes READY."""
    manifest = load_manifest(manifest_path)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with run_emulator(config, manifest, wait=False) as emu:
        try:
            _record(config, emu, False, manifest_path)
            waiting = loop.create_task(emu.wait_in_service(manifest))
            stopping = loop.create_task(stop.wait())
            await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not waiting.done():
                waiting.cancel()
                return
            stopping.cancel()
            waiting.result()
            _record(config, emu, True, manifest_path)
            _print_ready(config, emu, manifest)
            await stop.wait()
            print("# stopping: terminating replicas", file=sys.stderr, flush=True)
        finally:
            record = read_record(config)
            if record is not None and record.get("pid") == os.getpid():
                record_path(config).unlink(missing_ok=True)


def _print_ready(config: EmulatorConfig, emu: Emulator, manifest: Manifest) -> None:
    names = ", ".join(manifest.endpoints) or "none"
    runtimes = ", ".join(f"{name} ({emu.runtime_arn(name)})" for name in manifest.agent_runtimes)
    print(
        f"# emulator ready (pid {os.getpid()}): endpoints InService: {names}; "
        f"agent runtimes READY: {runtimes or 'none'}",
        flush=True,
    )
    print(f"# control plane + runtime {emu.http_url}, bidirectional stream {emu.h2_url}", flush=True)
    print(export_lines(public_env(config, emu.env), bool(config.sigv4_keys)), flush=True)
