"""Voices: what each loaded voice is (language and gender, read from Kokoro's names) and weighted
blends of them, on every transport (the WebSocket, `POST /invocations`, the OpenAI speech body).

A blend is written `af_bella(2)+af_sky(1)` (Kokoro-FastAPI's "Voice Combination"); `a+b` weighs each
part 1. Weights are normalised to sum to 1; a voice named twice counts once with the sum of its
weights, so `a(1)+a(1)` is `a` itself. A blend's voice pack is the weighted average of its parts'
packs (510 style rows of 256 values each): the model reads a style vector, never a voice's name, so
every row of the average is a style between its parts'.

`canonical_voice` checks a blend against the loaded voices and writes it one way
(`jf_alpha(0.6667)+jm_kumo(0.3333)`, weights to 4 significant digits), so every request for the same
blend names it the same; `blend_pack` builds the pack of a canonical name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

MAX_BLEND_PARTS = 8
"""Kokoro-FastAPI caps nothing; eight parts already average away most of what tells voices apart."""
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# Kokoro's voice names: a language letter, a gender letter, `_`, the speaker (hexgrad's VOICES.md).
LANGUAGES = {
    "a": "en-us",
    "b": "en-gb",
    "e": "es",
    "f": "fr-fr",
    "h": "hi",
    "i": "it",
    "j": "ja",
    "p": "pt-br",
    "z": "cmn",
}
GENDERS = {"f": "female", "m": "male"}


class VoiceError(ValueError):
    """A voice or blend the container cannot speak with; `code` is a stable protocol error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class VoiceInfo:
    id: str
    language: str | None
    gender: str | None

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "name": self.id, "language": self.language, "gender": self.gender}


def voice_info(name: str) -> VoiceInfo:
    """What Kokoro's naming says about a voice; None where the name does not follow it."""
    if len(name) > 3 and name[2] == "_":
        return VoiceInfo(name, LANGUAGES.get(name[0]), GENDERS.get(name[1]))
    return VoiceInfo(name, None, None)


def voice_language(voice: str) -> str | None:
    """The language a voice or blend speaks: its (first) part's, as Kokoro's name says; None where the
    name says none. A blend's parts are checked already (`canonical_voice`)."""
    return voice_info(voice.split("+", 1)[0].split("(", 1)[0].strip()).language


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 40 else f"{value[:40]!r}..."


def _part(piece: str) -> tuple[str, str | None] | None:
    """`voice` or `voice(weight)` (spaces allowed around each) as (name, weight text); None otherwise.
    Read by hand, in one pass: a regular expression with optional spaces on both sides of a lazy weight
    backtracked on `jm_kumo(` and 2,000 spaces, 5.2 s on the event loop (4,000 spaces: over 30 s)."""
    text = piece.strip()
    opened = text.find("(")
    if opened < 0:
        name, written = text, None
    elif text.endswith(")"):
        name, written = text[:opened].rstrip(), text[opened + 1 : -1].strip()
        if "(" in written or ")" in written:
            return None
    else:
        return None
    return (name, written) if _NAME.fullmatch(name) else None


def blend_parts(spec: str, known: Collection[str]) -> list[tuple[str, float]]:
    """`spec` as (voice, weight) parts, duplicates merged, weights summing to 1; VoiceError naming the
    part that is wrong (`unknown_voice`, `invalid_voice_blend`)."""
    pieces = spec.split("+")
    if len(pieces) > MAX_BLEND_PARTS:
        raise VoiceError(
            "invalid_voice_blend",
            f"a blend has at most {MAX_BLEND_PARTS} parts; {_shown(spec)} has {len(pieces)}",
        )
    weights: dict[str, float] = {}
    for index, piece in enumerate(pieces, 1):
        parsed = _part(piece)
        if parsed is None:
            raise VoiceError(
                "invalid_voice_blend",
                f"part {index} of the blend, {_shown(piece)}, is not voice or voice(weight)",
            )
        name, written = parsed
        if name not in known:
            raise VoiceError(
                "unknown_voice",
                f"unknown voice {_shown(name)} (part {index} of the blend); "
                f"available: {', '.join(sorted(known))}",
            )
        try:
            weight = 1.0 if written is None else float(written)
        except ValueError:
            weight = math.nan
        if not math.isfinite(weight) or weight <= 0:
            raise VoiceError(
                "invalid_voice_blend",
                f"part {index} of the blend ({name}) has weight {_shown(str(written))}; "
                "a weight is a number above 0",
            )
        weights[name] = weights.get(name, 0.0) + weight
    # Scaled by the largest first: `a(1e308)+b(1e308)` summed to infinity, every weight became 0, and the
    # request failed in synthesis instead of speaking the even blend it names.
    largest = max(weights.values())
    scaled = {name: weight / largest for name, weight in weights.items()}
    total = sum(scaled.values())
    return [(name, weight / total) for name, weight in scaled.items()]


def canonical_voice(spec: str, known: Collection[str]) -> str:
    """One voice's name, or the blend written one way (`a(0.6667)+b(0.3333)`); VoiceError if invalid."""
    parts = blend_parts(spec, known)
    if len(parts) == 1:
        return parts[0][0]
    return "+".join(f"{name}({weight:.4g})" for name, weight in parts)


def blend_pack(packs: Mapping[str, np.ndarray], voice: str) -> np.ndarray:
    """The voice pack of a loaded voice, or of a blend: the weighted average of its parts' packs."""
    if voice in packs:
        return packs[voice]
    parts = blend_parts(voice, packs)
    mixed = sum(weight * packs[name].astype(np.float64) for name, weight in parts)
    return np.asarray(mixed, dtype=np.float32)
