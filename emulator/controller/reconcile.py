"""The controller: a Kubernetes-style reconcile loop from API state to running replicas.

Desired state is what the control plane recorded (endpoints and their configs); actual state is the
replicas the runtime runs. Each pass, for every endpoint, it starts missing replicas, restarts dead
ones (with back-off), probes `GET /ping` (readiness, 2 s timeout), replaces a ready replica that
fails `unhealthy_probes` probes in a row (a frozen or wedged container), promotes a pending deployment once
all its replicas are ready (Creating/Updating -> InService, then stops the old replicas), fails it
after the startup timeout, and tears endpoints down on DeleteEndpoint (SIGTERM, SIGKILL after the
grace period). AgentCore agent runtimes go through the same steps with one replica per version
(CREATING/UPDATING -> READY, or CREATE_FAILED/UPDATE_FAILED with the reason). API calls and replica
exits wake it at once; otherwise it runs every `reconcile_interval_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine

import httpx

from emulator.config import EmulatorConfig
from emulator.controller import modeldata
from emulator.controller.runtimes import Runtime, RuntimeUnavailable, StartRequest
from emulator.controller.store import AgentRuntime, Deployment, Endpoint, Replica, Store

log = logging.getLogger("emulator.controller.reconcile")

PING_FAILURE = (
    "The primary container for production variant {variant} did not pass the ping health check. "
    "Please check CloudWatch logs for this endpoint."
)

RUNTIME_FAILURE = "The agent runtime container did not pass the ping health check on port 8080"


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

    async def run(self) -> None:
        while True:
            for endpoint in list(self.store.endpoints.values()):
                try:
                    await self._reconcile(endpoint)
                except Exception:
                    log.exception("reconciling endpoint %s failed", endpoint.name)
            for runtime in list(self.store.agent_runtimes.values()):
                try:
                    await self._reconcile_runtime(runtime)
                except Exception:
                    log.exception("reconciling agent runtime %s failed", runtime.name)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.reconcile_interval_s):
                    await self._wake.wait()
            self._wake.clear()

    async def shutdown(self) -> None:
        """Stop every replica of every endpoint (the emulator is exiting)."""
        replicas = [r for ep in self.store.endpoints.values() for d in ep.deployments() for r in d.replicas()]
        replicas += [r for rt in self.store.agent_runtimes.values() for r in rt.replicas()]
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

    # reconcile ----------------------------------------------------------------------------------

    async def _reconcile(self, ep: Endpoint) -> None:
        if ep.status == "Deleting":
            if ep.deleting is None:
                ep.deleting = asyncio.get_running_loop().create_task(self._delete(ep))
            return
        for deployment in ep.deployments():
            self._ensure_replicas(ep, deployment)
        await self._probe([r for d in ep.deployments() for r in d.replicas() if r.phase == "Running"])
        if ep.pending is not None:
            self._progress(ep, ep.pending)
        if ep.current is not None:
            healthy = any(r.ready for r in ep.current.replicas())
            if healthy != ep.healthy:
                ep.healthy = healthy
                if not healthy:
                    self._event("Warning", "NoHealthyReplicas", ep.name, "no replica answers /ping")
                else:
                    self._event("Normal", "Healthy", ep.name, "a replica answers /ping again")

    def _ensure_replicas(self, ep: Endpoint, deployment: Deployment) -> None:
        for replica in deployment.replicas():
            failure = self._tend(replica, starting=deployment is ep.pending)
            if failure is not None:
                self._fail_pending(ep, f"{PING_FAILURE.format(variant=replica.variant)} ({failure})")
                return

    def _tend(self, replica: Replica, *, starting: bool) -> str | None:
        """Start a new replica, restart a dead one after its back-off; a replica that dies while its
        deployment is still starting is not restarted: the reason (with its log's end) is returned."""
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

    def _progress(self, ep: Endpoint, deployment: Deployment) -> None:
        elapsed = time.monotonic() - deployment.started
        for deployed in deployment.variants.values():
            timeout = deployed.variant.startup_timeout_s or self.config.startup_timeout_s
            if not all(r.ready for r in deployed.replicas) and elapsed > timeout:
                self._fail_pending(
                    ep,
                    f"{PING_FAILURE.format(variant=deployed.variant.name)} "
                    f"(no HTTP 200 from GET /ping within {timeout:g} s)",
                )
                return
        if all(r.ready for r in deployment.replicas()):
            old, ep.current, ep.pending = ep.current, deployment, None
            ep.config_name = deployment.config.name
            ep.status = "InService"
            ep.failure_reason = None
            ep.healthy = True
            ep.modified = time.time()
            self._event("Normal", "InService", ep.name, f"serving endpoint config {deployment.config.name}")
            if old is not None:
                for replica in old.replicas():
                    self._spawn(self._stop(replica))

    def retire(self, replica: Replica) -> None:
        """Stop a replica nothing routes to any more (in the background)."""
        self._spawn(self._stop(replica))

    def _fail_pending(self, ep: Endpoint, reason: str) -> None:
        deployment, ep.pending = ep.pending, None
        if deployment is not None:
            for replica in deployment.replicas():
                self._spawn(self._stop(replica))
        ep.failure_reason = reason
        ep.status = "Failed" if ep.current is None else "InService"
        ep.modified = time.time()
        self._event("Warning", "Failed" if ep.current is None else "UpdateFailed", ep.name, reason)

    async def _delete(self, ep: Endpoint) -> None:
        await self._stop_all(ep.name, [r for d in ep.deployments() for r in d.replicas()])
        if self.store.endpoints.get(ep.name) is ep:
            del self.store.endpoints[ep.name]

    async def _stop_all(self, name: str, replicas: list[Replica]) -> None:
        """Stop the replicas of a resource being deleted."""
        await asyncio.gather(*(self._stop(r) for r in replicas), return_exceptions=True)
        self._event("Normal", "Deleted", name, f"stopped {len(replicas)} replica(s)")

    # agent runtimes (AgentCore) ----------------------------------------------------------------------

    async def _reconcile_runtime(self, rt: AgentRuntime) -> None:
        if rt.status == "DELETING":
            if rt.deleting is None:
                rt.deleting = asyncio.get_running_loop().create_task(self._delete_runtime(rt))
            return
        for replica in rt.replicas():
            failure = self._tend(replica, starting=replica is rt.pending)
            if failure is not None:
                self._fail_runtime(rt, f"{RUNTIME_FAILURE} ({failure})")
                return
        await self._probe([r for r in rt.replicas() if r.phase == "Running"])
        if rt.pending is not None:
            if rt.pending.ready:
                old, rt.current, rt.pending = rt.current, rt.pending, None
                rt.status = "READY"
                rt.failure_reason = None
                rt.healthy = True
                rt.modified = time.time()
                self._event("Normal", "Ready", rt.name, f"serving version {rt.version}")
                if old is not None:
                    self.retire(old)
            elif time.monotonic() - rt.started > self.config.startup_timeout_s:
                self._fail_runtime(
                    rt,
                    f"{RUNTIME_FAILURE} (no HTTP 200 from GET /ping within "
                    f"{self.config.startup_timeout_s:g} s)",
                )
        if rt.current is not None and rt.current.ready != rt.healthy:
            rt.healthy = rt.current.ready
            if rt.healthy:
                self._event("Normal", "Healthy", rt.name, "its replica answers /ping again")
            else:
                self._event("Warning", "NoHealthyReplicas", rt.name, "its replica does not answer /ping")

    def _fail_runtime(self, rt: AgentRuntime, reason: str) -> None:
        replica, rt.pending = rt.pending, None
        if replica is not None:
            self.retire(replica)
        rt.failure_reason = reason
        rt.status = "CREATE_FAILED" if rt.current is None else "UPDATE_FAILED"
        rt.modified = time.time()
        self._event("Warning", rt.status, rt.name, reason)

    async def _delete_runtime(self, rt: AgentRuntime) -> None:
        await self._stop_all(rt.name, rt.replicas())
        if self.store.agent_runtimes.get(rt.id) is rt:
            del self.store.agent_runtimes[rt.id]

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
