"""CloudFormation (awsQuery): stacks made from a template (`template.py` resolves it) by the other
services (`resources.py`, the resource-type table), with their events, rollback and deletion
(`control.py`); what `deploy ... --target local` and `agent-infra destroy` call."""
