"""Model artifacts: what SageMaker downloads into /opt/ml/model before the container starts.

The emulator cannot reach S3, so `ModelDataUrl` / `ModelDataSource.S3DataSource.S3Uri` must name a
local directory, a `file://` URL, or a `.tar.gz` (extracted once into the emulator home, like
SageMaker's own decompression step). An unusable location raises `ModelDataError`, which the
SageMaker service answers as a ValidationException at CreateModel.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from pathlib import Path
from urllib.parse import unquote, urlparse

_ARCHIVES = (".tar.gz", ".tgz", ".tar")


class ModelDataError(ValueError):
    """A model data location the emulator cannot use (the message says why)."""


def local_path(uri: str) -> Path:
    """The local path a model data location names; ModelDataError if it is unusable."""
    parsed = urlparse(uri)
    if parsed.scheme in {"s3", "http", "https"}:
        raise ModelDataError(
            f"Could not access model data at {uri}: the emulator cannot reach {parsed.scheme}://; "
            "use a local directory, a file:// URL or a local .tar.gz"
        )
    path = Path(unquote(parsed.path) if parsed.scheme == "file" else uri).expanduser()
    if not path.exists():
        raise ModelDataError(f"Could not access model data at {uri}: {path} does not exist")
    if path.is_file() and not path.name.endswith(_ARCHIVES):
        raise ModelDataError(f"Could not access model data at {uri}: a file must be a .tar.gz archive")
    return path.resolve()


def prepare(uri: str, home: Path) -> Path:
    """The directory to mount at /opt/ml/model (extracting an archive on first use)."""
    path = local_path(uri)
    if path.is_dir():
        return path
    stat = path.stat()
    key = hashlib.sha256(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = home / "models" / key
    done = target.with_name(f"{key}.done")
    if done.exists() and target.is_dir():
        return target
    partial = target.with_name(f"{key}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(path) as archive:
        archive.extractall(partial, filter="data")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    done.write_text(str(path))
    return target
