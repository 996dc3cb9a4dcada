"""The `docker` runtime: `docker run -d -p <port>:8080 -v <model>:/opt/ml/model:ro -e K=V IMAGE serve`.

This is how SageMaker (and its Python SDK's local mode) starts a container; the bidirectional
capability is read from the image label. It drives the docker CLI, so it needs a running engine;
without one every call raises `RuntimeUnavailable("no Docker engine: ...")`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil

from emulator.runtimes import BIDI_LABEL, ReplicaHandle, RuntimeUnavailable, StartRequest
from emulator.runtimes.process import free_port


async def _docker(*args: str, limit_s: float | None = 120) -> tuple[int, str, str]:
    if shutil.which("docker") is None:
        raise RuntimeUnavailable("no Docker engine: the docker CLI is not installed")
    process = await asyncio.create_subprocess_exec(
        "docker",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(limit_s):
            out, err = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise RuntimeUnavailable(f"docker {args[0]} did not answer within {limit_s} s") from None
    return process.returncode or 0, out.decode(errors="replace").strip(), err.decode(errors="replace").strip()


async def docker_available() -> str | None:
    """None when a Docker engine answers, else the reason it does not."""
    try:
        code, _, err = await _docker("info", "--format", "{{.ServerVersion}}", limit_s=20)
    except RuntimeUnavailable as exc:
        return str(exc)
    if code != 0:
        return f"no Docker engine: {err.splitlines()[-1] if err else 'docker info failed'}"
    return None


class DockerReplica:
    def __init__(self, container_id: str, host: str, port: int, logs: asyncio.subprocess.Process) -> None:
        self.container_id = container_id
        self.host = host
        self.port = port
        self.ident = f"container {container_id[:12]}"
        self._logs = logs

    async def wait(self) -> int:
        code, out, _ = await _docker("wait", self.container_id, limit_s=None)
        await self._cleanup()
        return int(out) if code == 0 and out.isdigit() else 255

    async def stop(self, grace_s: float) -> None:
        await _docker("stop", "-t", str(max(0, round(grace_s))), self.container_id, limit_s=grace_s + 60)
        await self._cleanup()

    async def _cleanup(self) -> None:
        await _docker("rm", "-f", self.container_id)
        if self._logs.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._logs.kill()
            await self._logs.wait()


class DockerRuntime:
    kind = "docker"

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self._labels: dict[str, bool] = {}

    async def check(self) -> None:
        reason = await docker_available()
        if reason is not None:
            raise RuntimeUnavailable(reason)

    def check_image(self, image: str) -> None:
        return None

    async def is_bidirectional(self, image: str) -> bool:
        """Read once per image (every bidirectional session asks)."""
        if image not in self._labels:
            code, out, err = await _docker("image", "inspect", "-f", "{{json .Config.Labels}}", image)
            if code != 0:
                raise RuntimeUnavailable(f"image {image} is not available locally: {err}")
            labels = json.loads(out or "null") or {}
            self._labels[image] = str(labels.get(BIDI_LABEL, "")).lower() == "true"
        return self._labels[image]

    async def start(self, request: StartRequest) -> ReplicaHandle:
        await self.check()
        port = free_port(self.host)
        args = ["run", "-d", "--name", request.replica_id, "-p", f"{self.host}:{port}:8080"]
        if request.model_dir is not None:
            args += ["-v", f"{request.model_dir}:/opt/ml/model:ro"]
        for key, value in request.environment.items():
            args += ["-e", f"{key}={value}"]
        code, out, err = await _docker(*args, request.image, *request.args)
        if code != 0:
            raise RuntimeUnavailable(f"docker run {request.image} failed: {err}")
        container_id = out.splitlines()[-1]
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        with request.log_path.open("ab") as log:
            logs = await asyncio.create_subprocess_exec(
                "docker", "logs", "-f", container_id, stdout=log, stderr=asyncio.subprocess.STDOUT
            )
        return DockerReplica(container_id, self.host, port, logs)
