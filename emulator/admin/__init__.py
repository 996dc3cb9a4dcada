"""The operator's routes (`/_emulator/...`): not an AWS API, never signed; what `python -m emulator
status|metrics|traces` ask a running emulator (routes.py), the status they answer (status.py), the
dashboards CloudWatch holds, read for the status (dashboards.py), and the collector of the replicas'
OpenTelemetry spans (traces.py)."""
