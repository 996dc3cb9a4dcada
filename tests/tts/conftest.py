import pytest

from tts.config import TTSConfig
from tts.engine import KokoroEngine


@pytest.fixture(scope="session")
def engine() -> KokoroEngine:
    """The real Kokoro-82M (int8 ONNX from PyPI), loaded once."""
    return KokoroEngine(TTSConfig.from_env(threads=2))
