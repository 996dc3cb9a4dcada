import pytest

from tts.config import TTSConfig
from tts.engines.onnx.engine import OnnxEngine


@pytest.fixture(scope="session")
def engine() -> OnnxEngine:
    """The real Kokoro-82M (int8 ONNX from PyPI), loaded once."""
    return OnnxEngine(TTSConfig.from_env(threads=2))
