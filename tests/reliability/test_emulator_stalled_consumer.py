"""A consumer that stops reading for 20 s while its input keeps coming: the emulator's memory stays
bounded (HTTP/2 flow control and the WebSocket push back, nothing piles up), and once the consumer
reads again every echoed byte arrives and the stream ends cleanly.

The client is raw HTTP/2 (the `h2` library over TLS): it processes frames but grants no flow-control
window for the response, which is what an application that stops reading looks like on the wire.
"""

from __future__ import annotations

import gc
import socket
import ssl
import time
from collections.abc import Iterator

import h2.config
import h2.connection
import h2.events
import psutil
import pytest

from emulator.server import Emulator
from emulator.wire import eventstream
from tests.reliability.emulator_support import BIDI_PATH, echo_emulator, payload_part, say

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.slow, pytest.mark.timeout(180)]

STALL_S = 20.0
MESSAGE = payload_part(b"\x07" * 32 * 1024, DataType="BINARY")
RSS_GROWTH_LIMIT_MB = 64


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with echo_emulator(tmp_path_factory.mktemp("emulator"), end_of_input_grace_s=10.0) as running:
        yield running


class RawH2:
    def __init__(self, emu: Emulator) -> None:
        port = int(emu.h2_url.rsplit(":", 1)[1])
        tls = ssl.create_default_context(cafile=str(emu.tls.ca))
        tls.set_alpn_protocols(["h2"])
        self.sock = tls.wrap_socket(
            socket.create_connection(("127.0.0.1", port)), server_hostname="localhost"
        )
        self.sock.settimeout(0.05)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.stream = self.conn.get_next_available_stream_id()
        self.conn.send_headers(
            self.stream,
            [
                (":method", "POST"),
                (":path", BIDI_PATH.format(name="echo")),
                (":authority", f"localhost:{port}"),
                (":scheme", "https"),
                ("content-type", "application/vnd.amazon.eventstream"),
            ],
        )
        self.flush()
        self.received = bytearray()
        self.unacknowledged = 0
        self.ended = False

    def flush(self) -> None:
        if data := self.conn.data_to_send():
            self.sock.sendall(data)

    def pump(self, acknowledge: bool) -> None:
        """Process what arrived; grant window for the response only when `acknowledge`."""
        try:
            data = self.sock.recv(65536)
        except (TimeoutError, ssl.SSLWantReadError):
            data = b""
        for event in self.conn.receive_data(data) if data else []:
            if isinstance(event, h2.events.DataReceived):
                self.received += event.data
                self.unacknowledged += event.flow_controlled_length
            elif isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
                self.ended = True
        if acknowledge and self.unacknowledged:
            self.conn.acknowledge_received_data(self.unacknowledged, self.stream)
            self.unacknowledged = 0
        self.flush()

    def try_send(self, message: bytes) -> bool:
        if self.conn.local_flow_control_window(self.stream) < len(message):
            return False
        size = self.conn.max_outbound_frame_size
        for start in range(0, len(message), size):
            self.conn.send_data(self.stream, message[start : start + size])
        self.flush()
        return True


def test_a_consumer_that_stops_reading_for_20_s_costs_bounded_memory(emu: Emulator) -> None:
    me = psutil.Process()
    gc.collect()
    before_mb = me.memory_info().rss / 2**20
    client = RawH2(emu)
    sent = 0
    deadline = time.monotonic() + STALL_S
    while time.monotonic() < deadline:
        client.pump(acknowledge=False)
        while client.try_send(MESSAGE):
            sent += 1
    gc.collect()
    stalled_mb = me.memory_info().rss / 2**20
    # Reading again: every echo first, then the end of input. A WebSocket peer sends nothing after
    # the Close that end of input becomes, so a message that reaches the container together with it
    # is not echoed (the doc's rule for clients: end a session only after its output arrived).
    decoder = eventstream.Decoder()
    events: list[eventstream.Message] = []
    drain_deadline = time.monotonic() + 60
    while time.monotonic() < drain_deadline and not client.ended:
        client.pump(acknowledge=True)
        events += decoder.feed(bytes(client.received))
        client.received.clear()
        if sum(e.event_type == "PayloadPart" for e in events) == sent:
            break
    client.conn.end_stream(client.stream)
    client.flush()
    while not client.ended and time.monotonic() < drain_deadline:
        client.pump(acknowledge=True)
    events += decoder.feed(bytes(client.received))
    echoed = [e for e in events if e.event_type == "PayloadPart"]
    errors = [e.exception_type for e in events if e.message_type == "exception"]
    say(
        f"bidi consumer stalled {STALL_S:g} s while sending 32 KiB messages",
        f"{sent} messages got in during the stall, RSS {before_mb:.0f} -> {stalled_mb:.0f} MiB, then "
        f"{len(echoed)} echoes and errors {errors} once it read again",
    )
    client.sock.close()
    assert client.ended, "the stream did not end once the consumer read again"
    assert errors == [] and len(echoed) == sent
    assert stalled_mb - before_mb < RSS_GROWTH_LIMIT_MB
