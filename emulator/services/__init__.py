"""The emulated AWS services, one folder each, with the same file for the same role (moto's layout):

- `routes.py` — the HTTP side: binds the service's wire protocol (emulator.wire: awsJson1.1, awsQuery,
  restJson1, the event stream) to its operations and answers errors in the service's envelope; what
  `emulator/server/app.py` registers. Every service has one, and every path the service serves is declared
  there (the data plane's as `emulator.wire.views.View`s over the async views `runtime.py` and
  `bidirectional.py` return by operation name).
- `errors.py` — the service's AWS errors (codes and message shapes) on the one envelope of
  emulator.wire.awserrors. Every service has one.
- `control.py` — control-plane operations as plain methods (dict in, dict out) over the store, so the
  manifests, the tests and boto3 reach the same code.
- `runtime.py` — data-plane operations (invocations, converse).
- `shapes.py` — requests (and, for CloudFormation, what a template names) checked and typed.
- `bidirectional.py` — (SageMaker) the HTTP/2 event stream <-> the container's WebSocket.
- `template.py` — (CloudFormation) a template's intrinsic functions and creation order (no I/O).
- `resources.py` — (CloudFormation) the resource-type table: each type's resources created through
  the other services' operations.
- `provisioning.py` — (CloudFormation) a stack applied in the background: its resources made in order,
  each a stack event, rolled back or deleted newest first.
- `series.py` — (CloudWatch) the metric store, one metric at a time: its datapoints as columns in time
  order and CloudWatch's statistics over a range of them (numpy; no I/O).
- `request_log.py` — (Bedrock) the requests the service answered, kept for the operator's routes
  (`/_emulator/...`, emulator/admin/routes.py; not an AWS API).

No other file lives in a service folder, and the services never import each other: what one needs of
another (CloudFormation creating SageMaker and AgentCore resources) goes through the operation tables
that `emulator/server/app.py` wires in. Below them: emulator.wire, emulator.controller, emulator.llm.
"""
