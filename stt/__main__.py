"""`python -m stt serve` runs the speech-to-text container's server; `python -m stt transcribe FILE`
prints one WAV file's transcript.

SageMaker starts the image as `docker run IMAGE serve`, so `serve` is the first argument there too.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from stt.config import STTConfig
    from stt.serving.app import create_app

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    config = STTConfig.from_env(**overrides)
    uvicorn.run(
        create_app(config),
        host=config.host,
        port=config.port,
        log_level=args.log_level,
        ws="websockets-sansio",
        ws_max_size=1024 * 1024,  # a frame of 1 MiB is 32 s of audio: far more than any client sends
        timeout_graceful_shutdown=5,
    )
    return 0


def _transcribe(args: argparse.Namespace) -> int:
    from stt.config import STTConfig
    from stt.engines.whisper import Transcriber
    from stt.wire.protocol import parse_clip, words_json

    config = STTConfig.from_env()
    samples = parse_clip(args.file.read_bytes(), "audio/wav", config.max_clip_s)
    transcript = Transcriber(config).transcribe(samples, words=True)
    print(json.dumps({"text": transcript.text, "words": words_json(transcript.words)}, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stt", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the SageMaker container server")
    serve.add_argument("--host", help="listen address (default STT_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default STT_PORT or 8080)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.set_defaults(run=_serve)
    transcribe = commands.add_parser("transcribe", help="print the transcript of a 16 kHz mono WAV file")
    transcribe.add_argument("file", type=Path)
    transcribe.set_defaults(run=_transcribe)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
