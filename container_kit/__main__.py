"""The images' entry point: `python -m container_kit ARGS...` is `python -m $CONTAINER_PACKAGE ARGS...`.

A Dockerfile's exec-form ENTRYPOINT cannot name a build argument, so container_kit/Dockerfile's images
name their package in `CONTAINER_PACKAGE` and start here. The process is replaced (exec), not wrapped: the
package's server is the container's PID 1 and gets SageMaker's SIGTERM itself, as with
`ENTRYPOINT ["python", "-m", "tts"]`.
"""

from __future__ import annotations

import os
import sys

VARIABLE = "CONTAINER_PACKAGE"


def main(argv: list[str]) -> None:
    package = os.environ.get(VARIABLE, "")
    if not package.isidentifier():
        sys.exit(f"{VARIABLE} must name the image's package (tts, stt), got {package!r}")
    os.execv(sys.executable, [sys.executable, "-m", package, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
