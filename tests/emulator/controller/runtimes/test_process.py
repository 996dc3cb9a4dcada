"""The process runtime's image table: an image name matches its repository."""

from __future__ import annotations

import pytest

from emulator.controller.runtimes.process import image_key_candidates


@pytest.mark.parametrize(
    "image",
    [
        "kokoro-tts",
        "voice-agent-aws/kokoro-tts:latest",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/kokoro-tts:1.0",
        "localhost:5000/team/kokoro-tts@sha256:abc",
    ],
)
def test_image_names_match_their_repository(image: str) -> None:
    assert "kokoro-tts" in image_key_candidates(image)
