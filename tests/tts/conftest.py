import pytest

from tests.support.renders import Renders
from tts.config import TTSConfig
from tts.engines.onnx.engine import OnnxEngine
from tts.scheduling.plan import WindowPlan


@pytest.fixture(scope="session")
def engine() -> OnnxEngine:
    """The real Kokoro-82M (int8 ONNX from PyPI), loaded once."""
    return OnnxEngine(TTSConfig.from_env(threads=2))


@pytest.fixture(scope="session")
def plan(engine: OnnxEngine) -> WindowPlan:
    """The window plan the container gives that engine (its lanes resolved)."""
    return WindowPlan.from_config(TTSConfig.from_env(threads=2), engine.lanes)


@pytest.fixture(scope="session")
def renders(engine: OnnxEngine, plan: WindowPlan) -> Renders:
    """The streaming tests' sentences as that engine says them whole and on that plan, each once."""
    return Renders(engine, plan)
