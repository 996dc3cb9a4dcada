"""The Kubernetes-style controller: the resource store (desired state), the reconcile loop that keeps
replicas running through a runtime (processes or Docker containers), the images it builds, and the
router that leases replicas to invocations. Depends on emulator.wire and emulator.config, never on a face."""
