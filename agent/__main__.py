"""`python -m agent serve [--host H] [--port P]` runs the AgentCore app locally (127.0.0.1:8080 by
default; the image passes `--host 0.0.0.0`)."""

from __future__ import annotations

import argparse
import logging
import sys

from agent.config import AgentConfig

# How long open connections may finish after SIGTERM before they are closed: a conversation's `/ws`
# whose handler waits on the speech-to-text stream never ends by itself, and without a limit the replica
# sat out the runtime's whole 30 s grace (the emulator's stop, AgentCore's) until SIGKILL.
GRACEFUL_SHUTDOWN_S = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the voice agent (AgentCore app)")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )

    import uvicorn

    from agent.app import create_app

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    config = AgentConfig.from_env(**overrides)
    app = create_app(config)
    app.logger.setLevel(args.log_level.upper())  # the SDK logs every call at INFO
    uvicorn.run(
        app,
        host=config.host,
        port=config.port,
        log_level=args.log_level,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
