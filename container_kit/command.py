"""A container's command line: `python -m <package> serve` runs its server (SageMaker starts the image as
`docker run IMAGE serve`, so `serve` is the first argument there too), and `python -m <package> prepare
DIR` writes the weights its image serves from (container_kit/Dockerfile's build stage runs it), beside
the package's own commands:

    parser, commands = command_line("python -m tts", __doc__)
    add_serve(commands, TTSConfig, create_app, ws_max_size=...)
    add_prepare(commands, write_weights, "the int8 model ...")
    ...  # the package's own commands
    return run(parser, argv)
"""

from __future__ import annotations

import argparse
import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from container_kit.settings import ContainerSettings

LOG_LEVELS = ("debug", "info", "warning", "error")
# How long uvicorn lets open connections finish after SIGTERM (SageMaker sends SIGKILL 30 s after it).
GRACEFUL_SHUTDOWN_S = 5


def command_line(prog: str, description: str | None) -> tuple[argparse.ArgumentParser, Any]:
    """The parser and its subcommands (one is required)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    return parser, parser.add_subparsers(dest="command", required=True)


def add_serve(
    commands: Any, settings: type[ContainerSettings], app: Callable[[Any], Any], *, ws_max_size: int
) -> None:
    """`serve [--host H] [--port P] [--log-level L]`: `app(settings.from_env(host=H, port=P))` on uvicorn,
    WebSocket messages up to `ws_max_size` bytes. `app` imports the server's modules, so that the
    package's other commands start without them."""
    serve = commands.add_parser("serve", help="run the SageMaker container server")
    prefix = settings.ENV_PREFIX
    serve.add_argument("--host", help=f"listen address (default {prefix}_HOST or {settings.host})")
    serve.add_argument("--port", type=int, help=f"listen port (default {prefix}_PORT or {settings.port})")
    serve.add_argument("--log-level", default="info", choices=LOG_LEVELS)
    serve.set_defaults(run=functools.partial(_serve, settings=settings, app=app, ws_max_size=ws_max_size))


def _serve(
    args: argparse.Namespace,
    *,
    settings: type[ContainerSettings],
    app: Callable[[Any], Any],
    ws_max_size: int,
) -> int:
    import uvicorn

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    config = settings.from_env(**overrides)
    uvicorn.run(
        app(config),
        host=config.host,
        port=config.port,
        log_level=args.log_level,
        ws="websockets-sansio",
        ws_max_size=ws_max_size,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    return 0


def add_prepare(commands: Any, write: Callable[[Path], object], what: str) -> None:
    """`prepare DIR`: `write(DIR)` writes `what` into DIR, the image's weights, baked in by its build stage
    (`python -m ${PACKAGE} prepare ${WEIGHTS_DIR}`) so that the container never writes at run time."""
    prepare = commands.add_parser("prepare", help=f"write {what} into DIR (what the image serves from)")
    prepare.add_argument("dir", type=Path)
    prepare.set_defaults(run=functools.partial(_prepare, write=write, what=what))


def _prepare(args: argparse.Namespace, *, write: Callable[[Path], object], what: str) -> int:
    started = time.perf_counter()
    write(args.dir)
    print(f"wrote {what} into {args.dir} in {time.perf_counter() - started:.1f} s")
    return 0


def run(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse `argv` and run the chosen command, logging at INFO with timestamps."""
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return args.run(args)
