"""`python -m benchmarks [STUDY ...] [--quick] [--out DIR]`: run the named studies (all by default);
each prints a table and writes DIR/<study>.json and DIR/<study>.png. See BENCHMARKS.md."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from pathlib import Path

# name -> what it measures (the module is benchmarks/<name>.py)
STUDIES = {
    "transport": "first audio byte: the whole four-sentence text as one message vs its first sentence",
    "agent": "bidi vs batch time to first audio, on loopback and with the deployed hop's latency",
    "codecs": "bytes of PCM, base64-in-SSE, MP3, AAC and Opus over 24 clips; word error rate per codec",
    "framing": "MP3 in SSE through InvokeEndpointWithResponseStream with re-chunking: naive vs buffered",
    "throughput": "1, 2, 4, 8 concurrent sessions on one container: audio per wall second, first audio",
    "emulator": "what the emulator adds per message; 50 concurrent sessions",
    "engines": "the TTS engines side by side: ready time, real-time factor, first audio",
    "streaming": "streamed vs whole-segment decoding: first audio of 10-25 words; whole text vs kokoro-onnx",
    "gpu": "the torch engine on CUDA: load, RTF, first audio; 1, 4, 16 sessions (skipped without a GPU)",
    "batching": "the torch engine's windows of many sessions in one pass vs one by one (GPU check's study)",
    "gpu_image": "the GPU image on --gpus all: first audio, RTF, VRAM, sessions at real time (needs a GPU)",
    "playback": "1-8 sessions at once, both transports: first audio and stalls of a real-time listener",
    "capacity": "the sessions one replica keeps gap-free here, measured (what the deploy scales on)",
    "bargein": "an interrupt mid-answer: time to the last audio byte, to an idle container and model",
    "timestamps": "word timings vs Whisper's word alignment and the audio's onsets, held-out sentences",
    "openai_speech": "OpenAI's streamed pcm (emulator /v1) vs our bidi stream and WebSocket: first audio",
    "listen": "speech to text on held-out recordings: partial and final latency, WER, VAD false starts",
    "voice_turn": "a spoken question through the local stack: end of speech to first audio, by part",
    "llm": "SmolLM2-135M behind the emulated Bedrock: warm first token, tokens/s, concurrent first tokens",
    "voices": "every voice in its language beside kokoro-onnx: MOS, WER, language; misaki vs espeak; lexicon",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__.split("\n")[0],
        epilog="studies: " + "; ".join(f"{name}: {what}" for name, what in STUDIES.items()),
    )
    parser.add_argument("studies", nargs="*", metavar="STUDY", help="any of: " + ", ".join(STUDIES))
    parser.add_argument("--quick", action="store_true", help="about a minute per study (CI, a first look)")
    parser.add_argument("--out", type=Path, default=Path("out/benchmarks"), help="default: out/benchmarks")
    args = parser.parse_args(argv)
    unknown = [name for name in args.studies if name not in STUDIES]
    if unknown:
        parser.error(f"unknown study {', '.join(unknown)}; choose from {', '.join(STUDIES)}")
    failed = []
    for name in args.studies or list(STUDIES):
        print(f"\n== {name}: {STUDIES[name]}{' (--quick)' if args.quick else ''}", flush=True)
        started = time.monotonic()
        try:
            importlib.import_module(f"benchmarks.{name}").run(args.quick, args.out)
        except Exception:
            traceback.print_exc()
            failed.append(name)
        print(f"({name}: {time.monotonic() - started:.0f} s)", flush=True)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
