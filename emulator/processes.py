"""Local processes and ports, below every other layer of the emulator: a free loopback port and
whether a pid still lives (the runtimes, the record of a running emulator), and for the emulator's
tools (the local stack, benchmarks, tests) a child server in its own process group that is always
reaped with everything it started, and a wait for its health check. Every child gets its own
temporary directory (`own_tmpdir`), removed once it has exited."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def own_tmpdir(name: str) -> tempfile.TemporaryDirectory:
    """A new directory for one child's temporary files (its `TMPDIR`), removed by its `cleanup()` once the
    child has exited, as a container's /tmp goes with it. A server's own clean-up at exit does not
    always run: uvicorn re-raises the SIGTERM it shut down on, which ends the process before atexit
    handlers and finalizers, and a killed process runs none. phonemizer's copy of libespeak-ng (0.6 MB,
    deleted only by a finalizer) stayed in the host's /tmp that way: 70-89 of them after one default
    test run."""
    return tempfile.TemporaryDirectory(prefix=f"{name}-", ignore_cleanup_errors=True)


def wait_http_ok(url: str, timeout_s: float, process: subprocess.Popen | None = None) -> None:
    """Poll `url` until it answers 200; fail early if `process` exits first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode} before {url} answered")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1.0, trust_env=False).status_code == 200:
                return
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer 200 within {timeout_s:g} s")


def stop_group(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the child's process group, SIGKILL it after `grace_s`."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextlib.contextmanager
def child(
    argv: list[str],
    *,
    env: Mapping[str, str] | None = None,
    ready_url: str | None = None,
    timeout_s: float = 60.0,
    cwd: Path | None = None,
    **popen: object,
) -> Iterator[subprocess.Popen]:
    """Run `argv` in a new session until the block ends, optionally waiting for `ready_url` first; its
    temporary directory (`own_tmpdir`, unless `env` names one) is removed once it has exited."""
    with own_tmpdir(Path(argv[0]).name) as tmp:
        env = {**os.environ, "TMPDIR": tmp, **(env or {})}
        process = subprocess.Popen(argv, env=env, cwd=cwd, start_new_session=True, **popen)
        try:
            if ready_url is not None:
                wait_http_ok(ready_url, timeout_s, process)
            yield process
        finally:
            stop_group(process)
