"""The sentences the streaming tests decode, as one engine says them, each rendering computed once.

The ONNX engine's whole-segment audio of a sentence, the fixed plan's streamed audio of it and what
Whisper hears in the whole segment are the references of the windowed-decoding, budgeted-step and
torch-equivalence tests (tests/tts/engines/test_decode.py, tests/tts/scheduling/test_plan.py,
tests/tts/engines/torch/test_engine.py); each test decoded and transcribed them again, about 1 s of
decoding and 0.8 s of Whisper per sentence on 2 cores (the three modules took 107 s of a fresh default
run, now 64). The text side and the ONNX decoder are deterministic on one machine (the same features,
audio and seams every time), so one rendering serves them all; the torch generator adds noise to every
render, so its renderings are one sample that its module's tests share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from tts.config import SAMPLES_PER_FRAME
from tts.engines.base import Features, SpeechEngine
from tts.scheduling.plan import WindowPlan
from tts.scheduling.steps import windowed

SENTENCE = "It shipped yesterday from our Denver warehouse and should arrive on Thursday."
SENTENCES = [
    "Thanks for waiting, I found your order.",
    SENTENCE,
    "If you need it sooner, I can upgrade the shipping at no cost.",
    "Would you like me to do that now?",
]
VOICE = "jm_kumo"

T = TypeVar("T")


def streamed(engine: SpeechEngine, feats: Features, plan: WindowPlan) -> tuple[np.ndarray, list[int]]:
    """`feats` decoded window by window as `plan` says, and the samples where its windows meet."""
    windows = windowed(engine, feats, plan)
    seams = [stop * SAMPLES_PER_FRAME for _, stop in plan.windows(feats.frames)[:-1]]
    pieces = []
    while not windows.done:
        pieces.append(windows.next())
    return np.concatenate(pieces), seams


class Renders:
    """Each text as `engine` says it in VOICE at speed 1 on `plan`, computed on first asking."""

    def __init__(self, engine: SpeechEngine, plan: WindowPlan) -> None:
        self.engine, self.plan = engine, plan
        self._made: dict[tuple[str, str], object] = {}

    def _once(self, kind: str, text: str, make: Callable[[], T]) -> T:
        if (kind, text) not in self._made:
            made = make()
            for array in made if isinstance(made, tuple) else (made,):
                if isinstance(array, np.ndarray):
                    array.setflags(write=False)  # shared: a test that wrote into it would change the next's
            self._made[kind, text] = made
        return self._made[kind, text]  # type: ignore[return-value]

    def tokens(self, text: str) -> list[int]:
        return self._once("tokens", text, lambda: self.engine.segments(text, "en-us")[0])

    def features(self, text: str) -> Features:
        return self._once("features", text, lambda: self.engine.features(self.tokens(text), VOICE, 1.0))

    def whole(self, text: str) -> np.ndarray:
        """The whole segment decoded at once."""
        return self._once("whole", text, lambda: self.engine.decode(self.features(text)))

    def streamed(self, text: str) -> tuple[np.ndarray, list[int]]:
        """The plan's windows decoded one by one, and where they meet."""
        return self._once("streamed", text, lambda: streamed(self.engine, self.features(text), self.plan))

    def heard_whole(self, text: str) -> str:
        """What Whisper hears in the whole segment."""
        from tools.asr import transcribe
        from tts.wire.audio import float_to_pcm16

        return self._once("heard", text, lambda: transcribe(float_to_pcm16(self.whole(text))))
