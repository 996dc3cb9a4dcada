"""The controller: a Kubernetes-style reconcile loop from API state to running replicas.

Desired state is what the control plane recorded (endpoints and their configs, agent runtimes);
actual state is the replicas the runtime runs. SageMaker endpoints and AgentCore agent runtimes go
through one replica state machine (`Controller._reconcile`): each resource has a version serving
(`current`) and at most one being brought up (`pending`), each made of replica sets (a deployment's
variants; an agent runtime version's one replica). Each pass, for every resource, it starts missing
replicas, restarts dead ones (with back-off), probes `GET /ping` (readiness, 2 s timeout), replaces a
ready replica that fails `unhealthy_probes` probes in a row (a frozen or wedged container), promotes
the pending version once all its replicas are ready (then stops the old version's replicas), fails it
when one of its replicas dies or a set is not ready after its startup timeout, and tears the resource
down once it is being deleted (SIGTERM, SIGKILL after the grace period). What differs between the two
kinds (the status names, the messages, where a startup timeout comes from) is a `Served` subclass
(served.py). API calls and replica exits wake it at once; otherwise it runs every
`reconcile_interval_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine, Iterator

import httpx

from emulator.config import EmulatorConfig
from emulator.controller import modeldata
from emulator.controller.runtimes import Runtime, RuntimeUnavailable, StartRequest
from emulator.controller.served import Served, ServedEndpoint, ServedRuntime
from emulator.controller.store import Replica, Store

log = logging.getLogger("emulator.controller.reconcile")


def restart_backoff(restarts: int) -> float:
    """0 s for the first restart, then 0.5, 1, 2, ... up to 10 s (a crash loop slows down)."""
    return 0.0 if restarts == 0 else min(10.0, 0.5 * 2 ** (restarts - 1))


def log_tail(replica: Replica, lines: int = 5) -> str:
    try:
        text = replica.log_path.read_bytes()[-4000:].decode(errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip())


class Controller:
    def __init__(
        self, config: EmulatorConfig, store: Store, runtime: Runtime, http: httpx.AsyncClient
    ) -> None:
        self.config = config
        self.store = store
        self.runtime = runtime
        self.http = http
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    def wake(self) -> None:
        self._wake.set()

    def endpoint_replicas_starting(self) -> bool:
        """Whether a replica of an endpoint is on its way up: created, starting, or running and not yet
        ready (loading its model, warming up, timing its engine)."""
        return any(
            replica.phase in ("Pending", "Starting") or (replica.phase == "Running" and not replica.ready)
            for endpoint in list(self.store.endpoints.values())
            for deployment in (endpoint.current, endpoint.pending)
            if deployment is not None
            for replica in deployment.replicas()
        )

    def _served(self) -> Iterator[Served]:
        """Every endpoint, then every agent runtime (each list read when the loop reaches it)."""
        yield from (ServedEndpoint(ep, self.config) for ep in list(self.store.endpoints.values()))
        yield from (ServedRuntime(rt, self.config) for rt in list(self.store.agent_runtimes.values()))

    async def run(self) -> None:
        while True:
            for served in self._served():
                try:
                    await self._reconcile(served)
                except Exception:
                    log.exception("reconciling %s %s failed", served.kind, served.resource.name)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.reconcile_interval_s):
                    await self._wake.wait()
            self._wake.clear()

    async def shutdown(self) -> None:
        """Stop every replica of every endpoint and agent runtime (the emulator is exiting)."""
        replicas = [r for s in self._served() for v in s.versions() for r in s.replicas(v)]
        await asyncio.gather(*(self._stop(r) for r in replicas), return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro: Coroutine[None, None, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _event(self, type_: str, reason: str, obj: str, message: str) -> None:
        self.store.events.add(type_, reason, obj, message)
        (log.warning if type_ == "Warning" else log.info)("%s %s: %s", reason, obj, message)

    def retire(self, replica: Replica) -> None:
        """Stop a replica nothing routes to any more (in the background)."""
        self._spawn(self._stop(replica))

    # the replica state machine ------------------------------------------------------------------

    async def _reconcile(self, served: Served) -> None:
        resource = served.resource
        if resource.status == served.deleting:
            if resource.deleting is None:
                resource.deleting = asyncio.get_running_loop().create_task(self._delete(served))
            return
        self._tend_versions(served)
        await self._probe([r for v in served.versions() for r in served.replicas(v) if r.phase == "Running"])
        if resource.pending is not None:
            self._progress(served)
        if resource.current is not None:
            healthy = any(r.ready for r in served.replicas(resource.current))
            if healthy != resource.healthy:
                resource.healthy = healthy
                if healthy:
                    self._event("Normal", "Healthy", resource.name, served.healthy_again)
                else:
                    self._event("Warning", "NoHealthyReplicas", resource.name, served.unhealthy)

    def _tend_versions(self, served: Served) -> None:
        """Tend every replica; the first replica of the pending version that dies fails that version."""
        for version in served.versions():
            starting = version is served.resource.pending
            for replica_set in served.sets(version):
                for replica in replica_set.replicas:
                    failure = self._tend(replica, starting=starting)
                    if failure is not None:
                        self._fail_pending(served, f"{replica_set.failure} ({failure})")
                        return

    def _tend(self, replica: Replica, *, starting: bool) -> str | None:
        """Start a new replica, restart a dead one after its back-off; a replica that dies while its
        version is still starting is not restarted: the reason (with its log's end) is returned."""
        if replica.phase == "Pending":
            replica.phase = "Starting"
            replica.starter = self._spawn(self._start(replica))
        elif replica.phase == "Exited":
            if starting:
                detail = replica.start_error or f"replica {replica.id} exited with status {replica.exit_code}"
                tail = log_tail(replica)
                return f"{detail}{'; log: ' + tail if tail else ''}"
            if time.monotonic() >= (replica.exited_at or 0) + restart_backoff(replica.restarts):
                replica.restarts += 1
                self._event(
                    "Normal", "Restarting", replica.id, f"restart #{replica.restarts} of {replica.variant}"
                )
                replica.phase = "Starting"
                replica.starter = self._spawn(self._start(replica))
        return None

    def _progress(self, served: Served) -> None:
        """Fail the pending version once a set of it is past its startup timeout; promote it once all
        its replicas are ready."""
        resource = served.resource
        pending = resource.pending
        elapsed = time.monotonic() - served.started()
        for replica_set in served.sets(pending):
            timeout = replica_set.startup_timeout_s
            if not all(r.ready for r in replica_set.replicas) and elapsed > timeout:
                self._fail_pending(
                    served, f"{replica_set.failure} (no HTTP 200 from GET /ping within {timeout:g} s)"
                )
                return
        if all(r.ready for r in served.replicas(pending)):
            old, resource.current, resource.pending = resource.current, pending, None
            reason, message = served.promote(pending)
            resource.status = served.serving
            resource.failure_reason = None
            resource.healthy = True
            resource.modified = time.time()
            self._event("Normal", reason, resource.name, message)
            if old is not None:
                for replica in served.replicas(old):
                    self.retire(replica)

    def _fail_pending(self, served: Served, reason: str) -> None:
        resource = served.resource
        pending, resource.pending = resource.pending, None
        if pending is not None:
            for replica in served.replicas(pending):
                self.retire(replica)
        resource.status, event_reason = served.failed()
        resource.failure_reason = reason
        resource.modified = time.time()
        self._event("Warning", event_reason, resource.name, reason)

    async def _delete(self, served: Served) -> None:
        """Stop the replicas of a resource being deleted, then forget it."""
        name = served.resource.name
        replicas = [r for v in served.versions() for r in served.replicas(v)]
        await asyncio.gather(*(self._stop(r) for r in replicas), return_exceptions=True)
        self._event("Normal", "Deleted", name, f"stopped {len(replicas)} replica(s)")
        served.forget(self.store)

    # replicas -----------------------------------------------------------------------------------

    async def _start(self, replica: Replica) -> None:
        replica.ready = False
        replica.failed_probes = 0  # a restart starts counting afresh: a loading container is not wedged
        replica.start_error = None
        model = replica.model
        try:
            model_dir = (
                await asyncio.to_thread(modeldata.prepare, model.model_data, self.config.home_dir)
                if model.model_data
                else None
            )
            replica.handle = await self.runtime.start(
                StartRequest(
                    replica.id,
                    model.image,
                    model.environment,
                    model_dir,
                    replica.log_path,
                    replica.container_args,
                )
            )
        except (RuntimeUnavailable, OSError, ValueError) as exc:
            replica.start_error = str(getattr(exc, "message", exc))
            replica.phase = "Exited"
            replica.exited_at = time.monotonic()
            self._event("Warning", "FailedToStart", replica.id, replica.start_error)
            self.wake()
            return
        if replica.phase != "Starting":
            await replica.handle.stop(self.config.stop_grace_s)
            replica.phase = "Exited"
            return
        replica.phase = "Running"
        replica.started_at = time.time()
        self._event(
            "Normal",
            "Started",
            replica.id,
            f"{model.image} on port {replica.handle.port} ({replica.handle.ident})",
        )
        replica.watcher = asyncio.get_running_loop().create_task(self._watch(replica))

    async def _watch(self, replica: Replica) -> None:
        handle = replica.handle
        assert handle is not None
        code = await handle.wait()
        replica.ready = False
        replica.exit_code = code
        replica.exited_at = time.monotonic()
        if replica.phase == "Terminating":
            return
        replica.phase = "Exited"
        self._event("Warning", "ReplicaExited", replica.id, f"exited with status {code}")
        self.wake()

    async def _stop(self, replica: Replica, grace_s: float | None = None) -> None:
        previous, replica.phase = replica.phase, "Terminating"
        replica.ready = False
        if previous == "Starting" and replica.starter is not None:
            await asyncio.shield(replica.starter)
            return
        if previous in {"Running", "Terminating"} and replica.handle is not None:
            await replica.handle.stop(self.config.stop_grace_s if grace_s is None else grace_s)
            if replica.watcher is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await replica.watcher
        replica.phase = "Exited"

    async def _probe(self, replicas: list[Replica]) -> None:
        results = await asyncio.gather(*(self._ping(r) for r in replicas))
        for replica, ok in zip(replicas, results, strict=True):
            if replica.phase != "Running":
                continue
            if ok:
                if not replica.ready:
                    self._event("Normal", "Ready", replica.id, "GET /ping answered 200")
                replica.failed_probes = 0
            elif replica.ready or replica.failed_probes:
                if replica.ready:
                    self._event("Warning", "Unhealthy", replica.id, "GET /ping did not answer 200")
                replica.failed_probes += 1
                if replica.failed_probes == self.config.unhealthy_probes:
                    self._event(
                        "Warning",
                        "Replacing",
                        replica.id,
                        f"no answer to {replica.failed_probes} probes in a row: stopping it to start anew",
                    )
                    self._spawn(self._replace(replica))
            replica.ready = ok

    async def _replace(self, replica: Replica) -> None:
        """Kill an unhealthy replica (it does not answer, so no grace period); the next pass restarts
        it like one that exited."""
        await self._stop(replica, grace_s=0)
        replica.failed_probes = 0
        replica.exited_at = time.monotonic()
        self.wake()

    async def _ping(self, replica: Replica) -> bool:
        address = replica.address
        if address is None:
            return False
        try:
            response = await self.http.get(
                f"http://{address[0]}:{address[1]}/ping", timeout=self.config.probe_timeout_s
            )
        except httpx.HTTPError:
            return False
        return response.status_code == 200
