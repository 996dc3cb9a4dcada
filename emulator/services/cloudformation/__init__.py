"""CloudFormation: the stacks the emulator holds (awsQuery, `control.py`), what `agent-infra destroy`
calls."""
