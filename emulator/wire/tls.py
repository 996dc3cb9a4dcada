"""The emulator's private CA and its TLS server certificate.

The official HTTP/2 client only speaks h2 over TLS with ALPN (no cleartext h2), so the bidirectional
listener needs a certificate the client can trust. A CA is made with `trustme` on first run and kept
in the emulator home, so a CA file handed to clients (`AWS_CA_BUNDLE`) stays valid across restarts.
The leaf certificate names `localhost` and `127.0.0.1`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import trustme

SERVER_NAMES = ("localhost", "127.0.0.1")


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    """PEM of the CA certificate: what clients trust."""
    cert_chain: Path
    key: Path


def _write(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write atomically (two emulators may start at once), private unless told otherwise."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    tmp.replace(path)


def ensure_tls(home: Path) -> TlsFiles:
    """Load the CA and server certificate from `home/tls`, creating what is missing."""
    tls_dir = home / "tls"
    tls_dir.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(tls_dir / "ca.pem", tls_dir / "server.pem", tls_dir / "server-key.pem")
    ca_key = tls_dir / "ca-key.pem"
    if files.ca.exists() and ca_key.exists():
        ca = trustme.CA.from_pem(files.ca.read_bytes(), ca_key.read_bytes())
        files.ca.chmod(0o644)  # homes made before the certificate was readable by other users
    else:
        ca = trustme.CA(organization_name="voice-agent-aws emulator")
        _write(ca_key, ca.private_key_pem.bytes())
        _write(files.ca, ca.cert_pem.bytes(), 0o644)  # a certificate: readable by any client
        files.cert_chain.unlink(missing_ok=True)
    if not (files.cert_chain.exists() and files.key.exists()):
        leaf = ca.issue_cert(*SERVER_NAMES)
        _write(files.key, leaf.private_key_pem.bytes())
        _write(files.cert_chain, b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    return files
