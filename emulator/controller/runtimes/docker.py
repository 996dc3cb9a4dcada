"""The `docker` runtime, on the Docker SDK for Python: one container per replica, started the way
SageMaker starts one (`docker run IMAGE serve`).

- Run: the image's port 8080 is published on the emulator's host address at a port Docker picks, the
  model data is mounted read-only at /opt/ml/model, the model's `Environment` is the container's.
  The bidirectional capability is read from the image label.
- GPUs: a container whose environment asks for CUDA (`TTS_PROVIDER=cuda` or `STT_DEVICE=cuda`, as the
  deploy's GPU endpoints do) gets every GPU (`--gpus all`) when the engine has the NVIDIA runtime;
  otherwise it runs on the CPU with that variable set to `cpu`, and one line in the replica's log names
  the override.
- Ownership: every container carries the labels `OWNER_HOME` (the emulator's home), `OWNER_INSTANCE`
  (this runtime's id) and `OWNER_PID`. `remove_leftovers(home)`, run when a docker emulator starts and
  by `python -m emulator down`, removes the containers of an emulator with the same home whose process
  is gone (it crashed or was killed), and nothing else.
- Exits: one thread follows the engine's event stream for this instance's `die` events and resolves
  the replica's `wait()`; an inspect every `POLL_S` covers an interrupted event stream.
- Logs: a thread per replica follows the container's output into the replica's log file (what
  `python -m emulator logs` prints).

Without an engine every call raises `RuntimeUnavailable("no Docker engine: ...")`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
from docker.models.containers import Container

from emulator.config import ImageSpec
from emulator.controller.runtimes import (
    BIDI_LABEL,
    ImagePlatform,
    ReplicaHandle,
    RuntimeUnavailable,
    StartRequest,
)
from emulator.controller.runtimes.process import resolve_image
from emulator.processes import free_port, pid_alive

log = logging.getLogger("emulator.docker")

OWNER_HOME = "voice-agent-aws.emulator.home"
OWNER_INSTANCE = "voice-agent-aws.emulator.instance"
OWNER_PID = "voice-agent-aws.emulator.pid"
REPLICA_LABEL = "voice-agent-aws.emulator.replica"
CONTAINER_PORT = "8080/tcp"
POLL_S = 5.0
"""How often a replica's state is inspected in case an exit event was missed."""
GPU_VARIABLES = ("TTS_PROVIDER", "STT_DEVICE")
"""The variables with which this repository's containers ask for CUDA (tts/README.md, stt/README.md)."""


def connect() -> docker.DockerClient:
    """The engine from the environment (DOCKER_HOST or the local socket); RuntimeUnavailable without one."""
    try:
        return docker.from_env(version="auto", timeout=120)
    except docker.errors.DockerException as exc:
        raise RuntimeUnavailable(f"no Docker engine: {exc}") from exc


def remove_leftovers(client: docker.DockerClient, home: Path, keep_instance: str | None = None) -> list[str]:
    """Remove the containers of dead emulators with this home; return their names."""
    removed = []
    for container in client.containers.list(all=True, filters={"label": f"{OWNER_HOME}={home}"}):
        labels = container.labels
        if labels.get(OWNER_INSTANCE) == keep_instance:
            continue
        pid = labels.get(OWNER_PID, "")
        if pid.isdigit() and int(pid) != os.getpid() and pid_alive(int(pid)):
            continue
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True)
            removed.append(container.name)
    return removed


class DockerReplica:
    def __init__(self, runtime: DockerRuntime, container: Container, host: str, port: int) -> None:
        self.runtime = runtime
        self.container = container
        self.host = host
        self.port = port
        self.ident = f"container {container.short_id}"
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def wait(self) -> int:
        while not self.exited.done():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_S):
                    await asyncio.shield(self.exited)
            if not self.exited.done():
                code = await asyncio.to_thread(self._exit_code)
                if code is not None and not self.exited.done():
                    self.exited.set_result(code)
        await self._remove()
        return self.exited.result()

    async def stop(self, grace_s: float) -> None:
        with contextlib.suppress(docker.errors.APIError):  # gone already, or being removed
            await asyncio.to_thread(self.container.stop, timeout=max(0, round(grace_s)))
        await self._remove()

    def _exit_code(self) -> int | None:
        """The exit status when the container no longer runs (None while it does)."""
        try:
            self.container.reload()
        except docker.errors.NotFound:
            return 255
        state = self.container.attrs.get("State", {})
        return None if state.get("Running") else int(state.get("ExitCode", 255))

    async def _remove(self) -> None:
        self.runtime.forget(self.container.id)
        with contextlib.suppress(docker.errors.APIError):  # gone already, or removal in progress
            await asyncio.to_thread(self.container.remove, force=True)


class DockerRuntime:
    kind = "docker"

    def __init__(
        self, host: str = "127.0.0.1", home: Path | None = None, images: Mapping[str, ImageSpec] | None = None
    ) -> None:
        self.host = host
        self.images = dict(images or {})
        self.home = (home or Path.cwd()).expanduser().resolve()
        self.instance = uuid.uuid4().hex
        self._client: docker.DockerClient | None = None
        self._labels: dict[str, bool] = {}
        self._replicas: dict[str, DockerReplica] = {}
        self._events: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._has_gpu: bool | None = None

    def has_gpu(self) -> bool:
        """The engine can give containers a GPU (`docker info` lists the NVIDIA runtime); read once."""
        if self._has_gpu is None:
            self._has_gpu = "nvidia" in (self.client.info().get("Runtimes") or {})
        return self._has_gpu

    def gpu_settings(self, environment: dict[str, str], log_path: Path) -> dict[str, Any]:
        """`--gpus all` for a container that asks for CUDA, or its CPU override, said in its log."""
        asking = [name for name in GPU_VARIABLES if environment.get(name) == "cuda"]
        if not asking:
            return {}
        if self.has_gpu():
            return {"device_requests": [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]}
        for name in asking:
            environment[name] = "cpu"
        overridden = ", ".join(f"{name}=cuda" for name in asking)
        line = f"emulator: no GPU in this Docker engine, so {overridden} is overridden to cpu"
        log.warning("%s: %s", log_path.stem, line)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("a") as out:
            out.write(line + "\n")
        return {}

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = connect()
        return self._client

    async def check(self) -> None:
        """The engine answers; containers a crashed emulator of this home left are removed."""
        client = await asyncio.to_thread(lambda: self.client)
        removed = await asyncio.to_thread(remove_leftovers, client, self.home, self.instance)
        if removed:
            log.warning("removed %d container(s) left by an earlier emulator: %s", len(removed), removed)

    def check_image(self, image: str) -> None:
        try:
            self.client.images.get(image)
        except docker.errors.ImageNotFound:
            raise RuntimeUnavailable(
                f"image {image} is not in the Docker engine; `python -m emulator up --runtime docker` "
                "builds the repository's images, or build/pull it first"
            ) from None
        except docker.errors.APIError as exc:
            raise RuntimeUnavailable(f"cannot inspect image {image}: {exc.explanation or exc}") from exc

    async def is_bidirectional(self, image: str) -> bool:
        """Read once per image (every bidirectional session asks)."""
        if image not in self._labels:
            try:
                found = await asyncio.to_thread(self.client.images.get, image)
            except docker.errors.ImageNotFound:
                raise RuntimeUnavailable(f"image {image} is not available locally") from None
            self._labels[image] = str((found.labels or {}).get(BIDI_LABEL, "")).lower() == "true"
        return self._labels[image]

    def image_platform(self, image: str) -> ImagePlatform | None:
        try:
            return ImagePlatform.from_inspect(self.client.api.inspect_image(image))
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.APIError as exc:
            raise RuntimeUnavailable(f"cannot inspect image {image}: {exc.explanation or exc}") from exc

    async def start(self, request: StartRequest) -> ReplicaHandle:
        self._follow_events()
        volumes = {}
        if request.model_dir is not None:
            volumes[str(request.model_dir)] = {"bind": "/opt/ml/model", "mode": "ro"}
        labels = {
            OWNER_HOME: str(self.home),
            OWNER_INSTANCE: self.instance,
            OWNER_PID: str(os.getpid()),
            REPLICA_LABEL: request.replica_id,
        }

        environment = dict(request.environment)
        gpus = await asyncio.to_thread(self.gpu_settings, environment, request.log_path)
        network, host_port = self._network(resolve_image(self.images, request.image), environment, volumes)
        name = f"{request.replica_id}-{self.instance[:8]}"

        def run() -> Container:
            container = self.client.containers.run(
                request.image,
                list(request.args),
                detach=True,
                name=name,
                volumes=volumes,
                environment=environment,
                labels=labels,
                **network,
                **gpus,
            )
            container.reload()
            return container

        try:
            container = await asyncio.to_thread(run)
        except docker.errors.ImageNotFound:
            raise RuntimeUnavailable(f"image {request.image} is not available locally") from None
        except docker.errors.APIError as exc:
            # `docker run` creates the container before starting it; one that cannot start stays behind.
            await asyncio.to_thread(self._remove_named, name)
            raise RuntimeUnavailable(f"docker run {request.image} failed: {exc.explanation or exc}") from exc
        if host_port is None:
            bindings = (container.attrs["NetworkSettings"]["Ports"] or {}).get(CONTAINER_PORT) or []
            if not bindings:
                await asyncio.to_thread(container.remove, force=True)
                raise RuntimeUnavailable(f"docker run {request.image}: port 8080 was not published")
            host_port = int(bindings[0]["HostPort"])
        replica = DockerReplica(self, container, self.host, host_port)
        self._replicas[container.id] = replica
        self._follow_logs(container, request.log_path)
        code = await asyncio.to_thread(replica._exit_code)
        if code is not None and not replica.exited.done():
            replica.exited.set_result(code)
        return replica

    def _network(
        self, spec: ImageSpec | None, environment: dict[str, str], volumes: dict[str, Any]
    ) -> tuple[dict[str, Any], int | None]:
        """Where a replica listens: its port 8080 published on a free host port (found once it runs:
        None), or, for an image that names its listen variables, the host's network on a port chosen
        here and given to it in those variables (with the emulator's CA at the same path inside)."""
        if spec is None or spec.listen_variables is None:
            return {"ports": {CONTAINER_PORT: (self.host, None)}}, None
        host_port = free_port(self.host)
        host_variable, port_variable = spec.listen_variables
        environment |= {host_variable: self.host, port_variable: str(host_port)}
        bundle = environment.get("AWS_CA_BUNDLE")
        if bundle:
            volumes[bundle] = {"bind": bundle, "mode": "ro"}
        return {"network_mode": "host"}, host_port

    def _remove_named(self, name: str) -> None:
        with contextlib.suppress(docker.errors.DockerException):
            self.client.containers.get(name).remove(force=True)

    def forget(self, container_id: str) -> None:
        self._replicas.pop(container_id, None)

    def close(self) -> None:
        if self._events is not None:
            with contextlib.suppress(Exception):
                self._events.close()
            self._events = None

    # threads -------------------------------------------------------------------------------------

    def _follow_events(self) -> None:
        if self._events is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._events = self.client.events(
            decode=True,
            filters={"type": "container", "event": "die", "label": f"{OWNER_INSTANCE}={self.instance}"},
        )
        threading.Thread(
            target=self._dispatch, args=(self._events,), name="docker-events", daemon=True
        ).start()

    def _dispatch(self, events: Any) -> None:
        with contextlib.suppress(Exception):
            for event in events:
                attributes = event.get("Actor", {}).get("Attributes", {})
                code = int(attributes.get("exitCode", 255))
                assert self._loop is not None
                self._loop.call_soon_threadsafe(self._exited, event.get("id", ""), code)

    def _exited(self, container_id: str, code: int) -> None:
        replica = self._replicas.get(container_id)
        if replica is not None and not replica.exited.done():
            replica.exited.set_result(code)

    @staticmethod
    def _follow_logs(container: Container, log_path: Path) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)

        def copy() -> None:
            with log_path.open("ab") as out, contextlib.suppress(Exception):
                for chunk in container.logs(stream=True, follow=True):
                    out.write(chunk)
                    out.flush()

        threading.Thread(target=copy, name=f"logs-{container.name}", daemon=True).start()
