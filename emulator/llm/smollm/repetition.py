"""The repetition rules of SmolLM2's greedy decoding on plain arrays: a repetition penalty over prompt
and answer and no token n-gram twice, as transformers' `RepetitionPenaltyLogitsProcessor` and
`NoRepeatNGramLogitsProcessor` apply them (the torch path uses those; the onnxruntime-genai path, whose
builder's model loops without them, uses these on the logits it reads back)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def penalize(logits: np.ndarray, sequence: Sequence[int], penalty: float, ngram: int) -> np.ndarray:
    """`logits` (one row, the vocabulary) with the rules applied for the tokens in `sequence` so far."""
    scores = np.array(logits, dtype=np.float32, copy=True)
    seen = np.unique(np.asarray(sequence, dtype=np.int64))
    if seen.size:
        values = scores[seen]
        scores[seen] = np.where(values < 0, values * penalty, values / penalty)
    if ngram >= 1 and len(sequence) >= ngram:
        scores[banned_next(sequence, ngram)] = -np.inf
    return scores


def banned_next(sequence: Sequence[int], ngram: int) -> np.ndarray:
    """The tokens that would complete an n-gram already in `sequence` (its last n-1 tokens seen before)."""
    ids = np.asarray(sequence, dtype=np.int64)
    if ngram == 1:
        return np.unique(ids)
    windows = np.lib.stride_tricks.sliding_window_view(ids, ngram)
    prefix = ids[len(ids) - ngram + 1 :]
    return windows[(windows[:, :-1] == prefix).all(axis=1), -1]
