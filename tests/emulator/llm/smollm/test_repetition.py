"""The onnxruntime-genai path's repetition rules are transformers' (what the torch path applies)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import NoRepeatNGramLogitsProcessor, RepetitionPenaltyLogitsProcessor

from emulator.llm.smollm.model import NO_REPEAT_NGRAM, REPETITION_PENALTY
from emulator.llm.smollm.repetition import penalize


@pytest.mark.parametrize("seed", range(6))
def test_penalize_matches_transformers_processors(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vocab = 50
    # A short vocabulary and a long sequence, so that 3-grams repeat and the ban has work to do.
    sequence = rng.integers(0, vocab, size=int(rng.integers(1, 200))).tolist()
    logits = rng.normal(0, 3, size=vocab).astype(np.float32)
    ids, scores = torch.tensor([sequence]), torch.tensor(logits[None])
    expected = RepetitionPenaltyLogitsProcessor(REPETITION_PENALTY)(ids, scores.clone())
    expected = NoRepeatNGramLogitsProcessor(NO_REPEAT_NGRAM)(ids, expected)[0].numpy()
    got = penalize(logits, sequence, REPETITION_PENALTY, NO_REPEAT_NGRAM)
    assert np.array_equal(np.isinf(got), np.isinf(expected))
    assert np.allclose(got[~np.isinf(got)], expected[~np.isinf(expected)], rtol=1e-6)
    assert int(got.argmax()) == int(expected.argmax())


def test_a_repeated_trigram_cannot_come_back() -> None:
    logits = np.zeros(10, dtype=np.float32)
    logits[3] = 5.0  # the best token would complete "1 2 3" a second time
    assert int(penalize(logits, [1, 2, 3, 4, 1, 2], 1.1, 3).argmax()) != 3
