"""Bodies bounded before they are read (emulator/wire/bodies.py), with SigV4 on: huge uploads, unsigned
or over a face's limit, announced or chunked, streamed from a socket (never allocated), are refused
from their headers while the emulator's memory stays flat, and the same connection serves the next
request."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import psutil
import pytest

from emulator.server import Emulator
from tests.emulator.support import boto_client
from tests.reliability.emulator_support import echo_emulator, say, sign

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.timeout(120)]

KEY, SECRET = "AKIDBODIES", "bodies-secret"
MB = 1024 * 1024
HUGE = 300 * MB
CHUNK = memoryview(bytes(MB))
RSS_GROWTH_LIMIT = 16 * MB
"""A few MB of buffers, sockets and the answer; the whole body read was 300 MB (67 -> 348 MB)."""


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with echo_emulator(tmp_path_factory.mktemp("emulator"), sigv4_keys={KEY: SECRET}) as running:
        yield running


class PeakRss:
    """This process's (the emulator's, which runs in a thread here) resident memory, sampled every
    5 ms while a block runs: the peak, not the end, since freed buffers leave RSS again."""

    def __enter__(self) -> PeakRss:
        self._process = psutil.Process()
        self.before = self.peak = self._process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._process.memory_info().rss)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth(self) -> int:
        return self.peak - self.before


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response (with a Content-Length) from `sock`."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        assert piece, f"the connection closed before an answer: {data!r}"
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        piece = sock.recv(65536)
        assert piece, "the connection closed inside the answer"
        rest += piece
    return int(status_line.split()[1]), headers, rest[:length]


def upload(
    emu: Emulator, path: str, size: int, headers: dict[str, str], *, chunked: bool
) -> tuple[socket.socket, tuple[int, dict[str, str], bytes]]:
    """POST `size` zero bytes to `path` over a raw socket, streamed in 1 MiB writes; the answer, and
    the socket, still open, for the next request."""
    url = urlsplit(emu.http_url)
    sock = socket.create_connection((url.hostname, url.port), timeout=60)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {url.netloc}",
        framing,
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    answer: list[tuple[int, dict[str, str], bytes]] = []
    reader = threading.Thread(target=lambda: answer.append(read_answer(sock)), daemon=True)
    reader.start()
    sent = 0
    try:
        while sent < size:
            if chunked:
                sock.sendall(f"{len(CHUNK):x}\r\n".encode())
            sock.sendall(CHUNK)
            if chunked:
                sock.sendall(b"\r\n")
            sent += len(CHUNK)
        if chunked:
            sock.sendall(b"0\r\n\r\n")
    except OSError as exc:  # the emulator may stop reading past its drain limit; it answered first
        say(f"upload stopped after {sent // MB} MiB", repr(exc))
    reader.join(60)
    assert answer, "no answer to the upload"
    return sock, answer[0]


def still_usable(emu: Emulator, sock: socket.socket) -> None:
    """The same connection answers another request, and the emulator serves a signed call."""
    url = urlsplit(emu.http_url)
    sock.sendall(f"GET /_emulator/status HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n".encode())
    status, _, body = read_answer(sock)
    assert status == 200 and json.loads(body)["endpoints"]
    sock.close()
    client = boto_client(emu, "sagemaker", key=KEY, secret=SECRET)
    assert client.describe_endpoint(EndpointName="echo")["EndpointStatus"] == "InService"


def signed_headers(emu: Emulator, path: str, service: str, extra: dict[str, str]) -> dict[str, str]:
    """A well-formed signature by a known key, over an empty body: passes every check the headers
    allow, so what refuses the upload is its size."""
    headers = sign(
        "POST", f"{emu.http_url}{path}", b"", key=KEY, secret=SECRET, service=service, headers=extra
    )
    headers.pop("Content-Length", None)
    return headers


CONTROL = {"X-Amz-Target": "SageMaker.ListEndpoints", "Content-Type": "application/x-amz-json-1.1"}


@pytest.mark.parametrize("chunked", [False, True], ids=["announced", "chunked"])
@pytest.mark.parametrize(
    "path",
    ["/", "/endpoints/echo/invocations", "/model/global.anthropic.claude-sonnet-4-6/converse"],
)
def test_an_unsigned_300_mb_upload_is_refused_from_its_headers_without_memory(
    emu: Emulator, path: str, chunked: bool
) -> None:
    with PeakRss() as rss:
        sock, (status, headers, _) = upload(emu, path, HUGE, CONTROL if path == "/" else {}, chunked=chunked)
    say(
        f"unsigned 300 MB to {path} ({'chunked' if chunked else 'announced'})",
        f"{status}, +{rss.growth / MB:.1f} MB",
    )
    assert (status, headers["x-amzn-errortype"]) == (403, "MissingAuthenticationTokenException")
    assert rss.growth < RSS_GROWTH_LIMIT, f"RSS grew {rss.growth / MB:.1f} MB"
    still_usable(emu, sock)


@pytest.mark.parametrize(
    ("path", "service", "extra", "size", "status", "code"),
    [
        # The control plane's 1 MiB: the 5 MB MetricName, as a body.
        ("/", "sagemaker", CONTROL, 5 * MB, 413, "RequestEntityTooLargeException"),
        # InvokeEndpoint's 6,291,456 bytes (botocore's model), SageMaker's own error.
        ("/endpoints/echo/invocations", "sagemaker", {}, 50 * MB, 400, "ValidationError"),
    ],
)
@pytest.mark.parametrize("chunked", [False, True], ids=["announced", "chunked"])
def test_a_signed_upload_over_its_faces_limit_is_refused_without_memory(
    emu: Emulator,
    path: str,
    service: str,
    extra: dict[str, str],
    size: int,
    status: int,
    code: str,
    chunked: bool,
) -> None:
    headers = signed_headers(emu, path, service, extra)
    with PeakRss() as rss:
        sock, (answered, answer_headers, body) = upload(emu, path, size, headers, chunked=chunked)
    say(
        f"signed {size // MB} MB to {path}",
        f"{answered} {answer_headers.get('x-amzn-errortype')}: {body[:120]!r}",
    )
    assert (answered, answer_headers["x-amzn-errortype"]) == (status, code)
    document = json.loads(body)
    assert "bytes" in (document.get("message") or document.get("Message"))
    assert rss.growth < RSS_GROWTH_LIMIT, f"RSS grew {rss.growth / MB:.1f} MB"
    still_usable(emu, sock)


def test_a_body_within_its_limit_still_reaches_the_container(emu: Emulator) -> None:
    client = boto_client(emu, "sagemaker-runtime", key=KEY, secret=SECRET)
    payload = b"x" * (6 * MB - 1024)
    answer = client.invoke_endpoint(EndpointName="echo", Body=payload, ContentType="application/octet-stream")
    assert answer["Body"].read() == payload
