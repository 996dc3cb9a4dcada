"""What an image build takes from the machine: trust, index and proxy.

- Trust and index. pip inside the build uses the machine's CA bundle (`SSL_CERT_FILE`, `PIP_CERT`,
  `REQUESTS_CA_BUNDLE`, or pip's `cert` setting) and its index settings (`pip config list`: index-url,
  extra-index-url, trusted-host, including `PIP_*` variables), written into the build context as
  `build-config/ca.pem` and `build-config/pip.conf`. Only the Dockerfiles' build stage reads them; the
  final stage copies the virtual environment, so neither reaches the image. (The SDK drives the classic
  builder, which has no `RUN --mount=type=secret`; Debian's docker.io 20.10 has BuildKit only through
  its CLI, so the build-stage split is what keeps them out of the image's layers.)
- The network. The proxy variables become build arguments, which Docker leaves out of the image history.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "NO_PROXY", "ALL_PROXY")
BUILD_CONFIG = "build-config"
"""The folder of the build context that the Dockerfiles' build stage reads (see build-config/README.md)."""


def pip_settings(python: str = sys.executable) -> dict[str, str]:
    """pip's effective settings (files and PIP_* variables), as `pip config list` shows them: one
    `section.key=repr(value)` line each, a later source over an earlier one (a variable over a file).
    Needs only the standard library: scripts/bootstrap runs it before anything is installed."""
    try:
        result = subprocess.run(
            [python, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    settings: dict[str, str] = {}
    for line in result.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            settings[key.rsplit(".", 1)[-1]] = str(ast.literal_eval(value))  # a list keeps its breaks
    return settings


def ca_bundle(environ: Mapping[str, str], pip: Mapping[str, str]) -> Path | None:
    """The machine's CA bundle when one is configured for Python or pip."""
    for candidate in (
        environ.get("SSL_CERT_FILE"),
        environ.get("PIP_CERT"),
        environ.get("REQUESTS_CA_BUNDLE"),
        pip.get("cert"),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _remote(urls: str) -> list[str]:
    """Index URLs a build can reach (a `file://` index on this machine is not inside the build)."""
    return [url for url in urls.split() if url.startswith(("http://", "https://"))]


def build_config_files(environ: Mapping[str, str], pip: Mapping[str, str]) -> dict[str, str]:
    """The build context's build-config/ files: pip.conf (always) and ca.pem (when configured)."""
    files: dict[str, str] = {}
    lines = ["[global]"]
    bundle = ca_bundle(environ, pip)
    if bundle is not None:
        files[f"{BUILD_CONFIG}/ca.pem"] = bundle.read_text()
        lines.append(f"cert = /tmp/{BUILD_CONFIG}/ca.pem")
    index = _remote(pip.get("index-url", ""))
    if index:
        lines.append(f"index-url = {index[0]}")
    extra = _remote(pip.get("extra-index-url", ""))
    if extra:
        lines.append(f"extra-index-url = {' '.join(extra)}")
    if pip.get("trusted-host"):
        lines.append(f"trusted-host = {pip['trusted-host']}")
    for name in ("timeout", "default-timeout", "retries"):
        if pip.get(name):
            lines.append(f"{name} = {pip[name]}")
    files[f"{BUILD_CONFIG}/pip.conf"] = "\n".join(lines) + "\n"
    return files


def proxy_build_args(environ: Mapping[str, str]) -> dict[str, str]:
    args: dict[str, str] = {}
    for name in PROXY_VARIABLES:
        for variant in (name, name.lower()):
            if environ.get(variant):
                args[variant] = environ[variant]
    return args
