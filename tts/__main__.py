"""`python -m tts serve` runs the container's server; `python -m tts speak` writes one WAV file;
`python -m tts export-model DIR --format torch|onnx` writes a model directory from the shipped weights.

SageMaker starts the image as `docker run IMAGE serve`, so `serve` is the first argument there too.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from facts import SAMPLE_RATE
from tts.config import TTSConfig
from tts.engines import MODEL_FORMATS


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from tts.serving.app import create_app

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    config = TTSConfig.from_env(**overrides)
    uvicorn.run(
        create_app(config),
        host=config.host,
        port=config.port,
        log_level=args.log_level,
        ws="websockets-sansio",
        ws_max_size=16 * 1024 * 1024,
        timeout_graceful_shutdown=5,
    )
    return 0


def _speak(args: argparse.Namespace) -> int:
    from tts.engines import create_engine
    from tts.voices import voice_language
    from tts.wire.audio import float_to_pcm16
    from tts.wire.encoders import wav_file

    config = TTSConfig.from_env()
    engine = create_engine(config)
    voice = args.voice or config.voice
    started = time.perf_counter()
    audio = engine.speak(args.text, voice, args.speed, args.lang or voice_language(voice) or config.lang)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tts", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the SageMaker container server")
    serve.add_argument("--host", help="listen address (default TTS_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default TTS_PORT or 8080)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.set_defaults(run=_serve)
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
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
