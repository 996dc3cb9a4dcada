"""The web page's relay on the chosen port, and a clear error for a port in use."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import httpx
import pytest

from local_stack.web import RelayError, relay


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html>the page</html>" * 1000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        sent = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", str(len(sent)))
        self.end_headers()
        self.wfile.write(sent[::-1])

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def page() -> Iterator[tuple[str, int]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.timeout(30)
def test_the_relay_serves_the_page_on_the_chosen_port(page: tuple[str, int]) -> None:
    port = _free_port()
    with relay(port, page) as url:
        assert url == f"http://127.0.0.1:{port}"
        with httpx.Client(trust_env=False) as client:  # one kept-alive connection, several requests
            assert client.get(f"{url}/").text == "<html>the page</html>" * 1000
            assert client.post(f"{url}/invocations", content=b"abc" * 50_000).content == b"cba" * 50_000
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/", trust_env=False)


def test_a_port_in_use_is_a_clear_error(page: tuple[str, int]) -> None:
    with pytest.raises(RelayError, match=f"cannot listen on 127.0.0.1:{page[1]}"), relay(page[1], page):
        pass
