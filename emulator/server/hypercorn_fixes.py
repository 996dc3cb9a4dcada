"""Two Hypercorn 0.18 bugs the bidirectional stream runs into, fixed in-process at server start.

1. When a response ends before the client has finished its request body (every bidirectional
   session the container closes first), Hypercorn forgets the stream but h2 still reports the
   client's DATA for it; `self.streams[stream_id]` then raises KeyError and drops the TLS connection
   with every other session multiplexed on it (pgjones/hypercorn#329; unmerged fixes #312, #334,
   #365). The fix drops such DATA after acknowledging it for flow control, as those PRs do.
2. Closing a TLS connection the client still writes to raises `ssl.SSLError
   APPLICATION_DATA_AFTER_CLOSE_NOTIFY` out of the connection task ("Unhandled exception in
   client_connected_cb", pgjones/hypercorn#67, #261, #291). The connection is over either way; the
   fix treats that error like the other "already closed" errors Hypercorn ignores there.
"""

from __future__ import annotations

import contextlib
import ssl

import h2.events
import h2.exceptions
from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.protocol.h2 import H2Protocol

_handle_events = H2Protocol._handle_events
_close = TCPServer._close


async def _handle_events_fixed(self: H2Protocol, events: list[h2.events.Event]) -> None:
    # One event at a time: a stream opened by an earlier event of the batch must exist when its
    # DATA is checked.
    for event in events:
        if isinstance(event, h2.events.DataReceived) and event.stream_id not in self.streams:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self.connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            continue
        await _handle_events(self, [event])


async def _close_fixed(self: TCPServer) -> None:
    with contextlib.suppress(ssl.SSLError):
        await _close(self)


def apply() -> None:
    """Idempotent; called when the emulator starts its server."""
    H2Protocol._handle_events = _handle_events_fixed
    TCPServer._close = _close_fixed
