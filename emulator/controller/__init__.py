"""The Kubernetes-style controller: the resource store (desired state), the reconcile loop that keeps
replicas running through a runtime (processes or Docker containers), one replica state machine for
endpoints and agent runtimes, and the router that leases replicas to invocations. Depends on
emulator.wire, emulator.config and emulator.processes, never on a service."""
