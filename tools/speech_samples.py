"""Held-out speech with transcripts, recorded by people (not by our TTS): the LibriVox reading of
*Sense and Sensibility* (public domain) that PocketSphinx ships in its test data. Its source release
on PyPI (`pocketsphinx==5.1.1`, 34 MB) carries the five 16 kHz mono WAV utterances and their
transcription; `pip download` fetches it once into the cache and the clips are extracted from it.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

CACHE = Path.home() / ".cache" / "voice-agent-aws" / "speech-samples"
PACKAGE = "pocketsphinx"
RELEASE = f"{PACKAGE}==5.1.1"
_MEMBER = "pocketsphinx-5.1.1/test/data/librivox/"


@dataclass(frozen=True)
class Recording:
    name: str
    wav: Path
    text: str

    def pcm(self) -> bytes:
        """The WAV's samples: 16 kHz mono s16le (the files are exactly that; the 44-byte header is cut)."""
        import wave

        with wave.open(str(self.wav)) as wav:
            return wav.readframes(wav.getnframes())


def _fetch() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob("pocketsphinx-*.tar.gz"))
    if found:
        return found[0]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            # Its sdist alone: `:all:` would build the build chain pip fetches to read the sdist's
            # metadata (scikit-build-core, Cython, setuptools) from source too, 7 min 41 s with an
            # empty pip cache on 2 cores, against 3 s with their wheels.
            "--no-binary",
            PACKAGE,
            "-q",
            "-d",
            CACHE,
            RELEASE,
        ],
        check=True,
    )
    return sorted(CACHE.glob("pocketsphinx-*.tar.gz"))[0]


def recordings() -> list[Recording]:
    """The five utterances, shortest first (extracted on the first call)."""
    target = CACHE / "librivox"
    transcription = target / "transcription"
    if not transcription.is_file():
        with tarfile.open(_fetch()) as release:
            for member in release.getmembers():
                if member.name.startswith(_MEMBER) and member.name.endswith((".wav", "transcription")):
                    member.name = member.name.removeprefix(_MEMBER)
                    release.extract(member, target, filter="data")
    found = []
    for line in transcription.read_text().splitlines():
        text, _, name = line.rpartition("(")
        name = name.strip(" )")
        text = text.replace("<s>", "").replace("</s>", "").strip()
        found.append(Recording(name, target / f"{name}.wav", text))
    return sorted(found, key=lambda r: r.wav.stat().st_size)
