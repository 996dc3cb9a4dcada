"""Dockerfiles read as text, for the image tests: their instructions and their final stage."""

from __future__ import annotations

import re
from pathlib import Path

from emulator.controller.runtimes import BIDI_LABEL
from tests.support.paths import REPO

LABEL = f"{BIDI_LABEL}=true"
"""What SageMaker reads before it opens an image's bidirectional stream."""
STT_DOCKERFILES = [REPO / "stt" / "Dockerfile", REPO / "stt" / "Dockerfile.gpu"]


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


def final_stage(dockerfile: Path) -> list[tuple[str, str]]:
    steps = instructions(dockerfile)
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]
