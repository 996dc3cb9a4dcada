"""Application Auto Scaling, recorded and shown, not applied (emulator.autoscaling.operations)."""
