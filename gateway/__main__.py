"""`python -m gateway [--endpoint-name kokoro-82m] [--port 8000]`: OpenAI's audio API on
http://127.0.0.1:PORT/v1 over the named SageMaker endpoints, with the caller's AWS credentials (boto3's
chain: the profile, or the variables `python -m emulator env` prints, which point it at the emulator)."""

from __future__ import annotations

import argparse

import uvicorn

from facts import TTS_ENDPOINT
from gateway.routes import create_app
from gateway.sagemaker import SageMakerEndpoints
from host_guard import allowed_hosts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gateway", description=__doc__)
    parser.add_argument(
        "--endpoint-name", action="append", dest="endpoints", help=f"repeatable; default {TTS_ENDPOINT}"
    )
    parser.add_argument("--region", help="default: boto3's (AWS_REGION, the profile)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name besides the loopback ones that a request's Host may name (repeatable; .example.com "
        "takes its subdomains, * any); bound to 0.0.0.0 without it, any name is answered",
    )
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    app = create_app(
        args.endpoints or [TTS_ENDPOINT],
        SageMakerEndpoints(args.region),
        allowed_hosts(args.host, args.allowed_host),
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)


if __name__ == "__main__":
    main()
