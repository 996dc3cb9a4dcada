"""The `process` runtime: an image name maps to a local command, one child process per replica.

Each child gets its own session (process group), so stopping a replica signals everything it
started, and on Linux it is also told to die with the emulator (PR_SET_PDEATHSIG) so a killed
emulator leaves no orphans. Children inherit the emulator's environment (PATH, virtualenv, ...) plus
the model's `Environment`, and `SM_MODEL_DIR`/`TTS_MODEL_DIR` when the model has data. Each gets its
own temporary directory (`TMPDIR`: `own_tmpdir`, unless the model's `Environment` names one), removed
once it has exited, as a container's /tmp goes with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import tempfile
from collections.abc import Mapping

from emulator.config import ImageSpec
from emulator.controller.runtimes import ReplicaHandle, RuntimeUnavailable, StartRequest
from emulator.processes import free_port, own_tmpdir

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform == "linux" else None


def image_key_candidates(image: str) -> list[str]:
    """`123.dkr.ecr.us-east-1.amazonaws.com/team/kokoro-tts:latest` -> full, untagged, path, last part."""
    untagged = image.split("@", 1)[0]
    last = untagged.rsplit("/", 1)[-1]
    if ":" in last:
        untagged = untagged[: len(untagged) - len(last)] + last.split(":", 1)[0]
    parts = untagged.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    return list(dict.fromkeys([image, untagged, "/".join(parts), parts[-1]]))


def resolve_image(images: Mapping[str, ImageSpec], image: str) -> ImageSpec | None:
    for key in image_key_candidates(image):
        if key in images:
            return images[key]
    return None


def _die_with_parent(parent: int) -> None:
    """Runs in the child between fork and exec."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


class ProcessReplica:
    def __init__(
        self, process: asyncio.subprocess.Process, host: str, port: int, tmp: tempfile.TemporaryDirectory
    ) -> None:
        self.process = process
        self.host = host
        self.port = port
        self.tmp = tmp
        self.ident = f"pid {process.pid}"

    async def wait(self) -> int:
        code = await self.process.wait()
        self._kill_group(signal.SIGKILL)
        self.tmp.cleanup()
        return code

    async def stop(self, grace_s: float) -> None:
        if self.process.returncode is None and grace_s > 0:
            self._kill_group(signal.SIGTERM)
            self._kill_group(signal.SIGCONT)  # a stopped replica handles SIGTERM only once it runs
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace_s):
                    await self.process.wait()
        self._kill_group(signal.SIGKILL)
        await self.process.wait()
        self.tmp.cleanup()

    def _kill_group(self, sig: int) -> None:
        """Signal the replica's whole process group (its session), leftovers included."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)


class ProcessRuntime:
    kind = "process"

    def __init__(self, images: Mapping[str, ImageSpec], host: str = "127.0.0.1") -> None:
        self.images = images
        self.host = host

    async def check(self) -> None:
        return None

    def close(self) -> None:
        return None

    def check_image(self, image: str) -> None:
        self._spec(image)

    def _spec(self, image: str) -> ImageSpec:
        spec = resolve_image(self.images, image)
        if spec is None:
            known = ", ".join(sorted(self.images)) or "none"
            raise RuntimeUnavailable(
                f"no local command for image {image!r} (known: {known}); "
                "map it under `images:` in the manifest"
            )
        return spec

    async def is_bidirectional(self, image: str) -> bool:
        spec = resolve_image(self.images, image)
        return spec is not None and spec.bidirectional

    def image_platform(self, image: str) -> None:
        """A local command has no image to inspect: it runs on this machine's CPU, whatever AWS runs."""
        return None

    async def start(self, request: StartRequest) -> ReplicaHandle:
        spec = self._spec(request.image)
        port = free_port(self.host)
        model_dir = str(request.model_dir) if request.model_dir else ""
        tmp = own_tmpdir(f"replica-{request.replica_id}")
        env = {**os.environ, "TMPDIR": tmp.name, **request.environment}
        if request.model_dir is not None:
            env["SM_MODEL_DIR"] = model_dir
            env["TTS_MODEL_DIR"] = model_dir
        argv = spec.argv(host=self.host, port=port, model_dir=model_dir)
        request.log_path.parent.mkdir(parents=True, exist_ok=True)
        parent = os.getpid()
        with request.log_path.open("ab") as log:
            try:
                process = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=asyncio.subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    preexec_fn=lambda: _die_with_parent(parent),
                )
            except OSError as exc:
                tmp.cleanup()
                raise RuntimeUnavailable(f"cannot run {argv[0]!r} for image {request.image}: {exc}") from exc
        return ProcessReplica(process, self.host, port, tmp)
