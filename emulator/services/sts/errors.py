"""STS's errors: awsQuery's XML `ErrorResponse` in STS's namespace (an action it does not serve is
`InvalidAction`, answered by emulator.wire.awsquery)."""

from __future__ import annotations

NAMESPACE = "https://sts.amazonaws.com/doc/2011-06-15/"
