"""`voices`: every shipped voice in its own language through the container, beside the peer; espeak-ng
alone against misaki for English; what a lexicon and SSML change.

1. English G2P, on words: misaki's gold lexicon is what Kokoro's voices heard in training for the words
   it has. For AGREEMENT_WORDS of its one-pronunciation entries (a fixed random sample), the share each
   G2P writes exactly as the entry does (and without stress marks): espeak-ng alone (kokoro-onnx's), espeak
   with misaki's own mapping into Kokoro's symbols (`tts/text/phonemes.py`), misaki.
2. Every voice (`facts.VOICES`; `--quick`: a few) reads the held-out text of its language
   (`VOICE_TEXTS`) through the container's WebSocket (its defaults: `TTS_G2P=espeak`) and through the
   peer, kokoro-onnx 0.6.1 on the same int8 model and voice pack (its espeak-ng G2P in the voice's
   language). Each clip is judged by DistillMOS (`distillmos`, a naturalness predictor, MOS 1-5), by
   Whisper base (`tools/asr.py`: the error rate against the text, words, or characters in Chinese and
   Japanese) and by Whisper's probability that it speaks the voice's language. English voices also
   read through a container with `TTS_G2P=misaki`: misaki against espeak-ng alone on sound.
   The issue's bar, for every English voice: error rate <= 0.05 and MOS within 0.05 of the peer's.
3. Hard words (`HARD_WORDS`: names, brands, acronyms, digits, an email) in a sentence, spoken by
   `af_heart` without a lexicon, with a lexicon entry, and as an SSML `<phoneme>`: whether Whisper writes
   the word as meant.
4. Breaks: `<break time>` of 250, 500 and 1000 ms between two sentences; the pause measured in the audio
   (the silence around the break: 10 ms blocks under -40 dBFS), target within 50 ms.
"""

from __future__ import annotations

import asyncio
import importlib.resources as resources
import json
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import report
from benchmarks.container import serving
from benchmarks.texts import HARD_WORDS, VOICE_TEXTS
from facts import SAMPLE_RATE, VOICES
from tools.asr import error_rate, language_probability, transcribe
from tools.tts_client import connect, speak
from tts.config import TTSConfig
from tts.engines import export_model
from tts.engines.weights import PYPI_MODEL_NAME
from tts.text.phonemes import to_kokoro
from tts.voices import voice_language

WHISPER = {"en-us": "en", "en-gb": "en", "es": "es", "fr-fr": "fr", "hi": "hi", "it": "it", "ja": "ja"}
WHISPER |= {"pt-br": "pt", "cmn": "zh"}
QUICK_VOICES = ("af_heart", "bm_george", "ff_siwis", "jf_alpha")
AGREEMENT_WORDS = 2000
BAR = {"error_rate": 0.05, "mos_gap": 0.05}
BREAKS_MS = (250, 500, 1000)
SILENT_RMS = 0.01  # -40 dBFS, as `benchmarks/timestamps.py`


def agreement(words: int) -> dict[str, Any]:
    """Part 1: each English G2P against misaki's gold entries, word by word."""
    from phonemizer.backend import EspeakBackend

    from tts.text.g2p import Phonemizer

    gold = json.loads((resources.files("misaki.data") / "us_gold.json").read_text(encoding="utf-8"))
    plain = sorted(w for w, ps in gold.items() if isinstance(ps, str) and w.isalpha() and w.islower())
    picked = [plain[i] for i in np.random.default_rng(0).choice(len(plain), words, replace=False)]
    tied = EspeakBackend("en-us", preserve_punctuation=True, with_stress=True, tie="^")
    espeak, misaki = Phonemizer("espeak"), Phonemizer("misaki")
    g2ps = {
        "espeak": lambda w: espeak.phonemize(w, "en-us"),
        "espeak_mapped": lambda w: to_kokoro(tied.phonemize([w], strip=True)[0], "en-us"),
        "misaki": lambda w: misaki.phonemize(w, "en-us"),
    }
    unstressed = str.maketrans("", "", "ˈˌ")
    result: dict[str, Any] = {"words": words}
    for name, g2p in g2ps.items():
        said = {w: g2p(w) for w in report.progress(picked, f"agreement: {name}")}
        # misaki's v1.0 G2P writes the lexicon's flap as T and its glottal stop as t
        expected = {w: gold[w].replace("ɾ", "T").replace("ʔ", "t") for w in picked}
        result[name] = {
            "exact": sum(said[w] == expected[w] for w in picked) / words,
            "without_stress": sum(
                said[w].translate(unstressed) == expected[w].translate(unstressed) for w in picked
            )
            / words,
        }
    return result


class Judge:
    """DistillMOS, Whisper's error rate and its language probability for one clip."""

    def __init__(self) -> None:
        import distillmos
        import torch

        torch.set_num_threads(2)
        self._torch = torch
        self._mos = distillmos.ConvTransformerSQAModel().eval()

    def mos(self, pcm: bytes) -> float:
        audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
        at_16k = np.interp(np.arange(0, len(audio), 1.5), np.arange(len(audio)), audio).astype(np.float32)
        with self._torch.no_grad():
            return float(self._mos(self._torch.from_numpy(at_16k)[None]))

    def clips(self, clips: list[bytes], texts: tuple[str, ...], lang: str) -> dict[str, float]:
        code = WHISPER[lang]
        heard = [transcribe(pcm, language=code) for pcm in clips]
        return {
            "error_rate": round(error_rate(" ".join(texts), " ".join(heard), code), 4),
            "mos": round(statistics.fmean(self.mos(pcm) for pcm in clips), 3),
            "language_p": round(statistics.fmean(language_probability(pcm, code) for pcm in clips), 3),
            "heard": " | ".join(heard),
        }


async def _ours(url: str, message: dict[str, Any]) -> bytes:
    async with connect(url) as channel:
        transcript = await speak(channel, [message], timeout_s=300)
    return transcript.pcm()


def ours(url: str, text: str, **fields: Any) -> bytes:
    return asyncio.run(_ours(url, {"text": text, **fields}))


def _pcm(audio: np.ndarray) -> bytes:
    return (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()


def measure_voices(config: TTSConfig, voices: tuple[str, ...], judge: Judge) -> dict[str, Any]:
    """Part 2: each voice through our container (and, for English, with misaki's G2P) and the peer."""
    from kokoro_onnx import Kokoro

    clips: dict[str, dict[str, list[bytes]]] = {voice: {} for voice in voices}
    with serving(config) as shipped:
        for voice in report.progress(voices, "ours"):
            texts = VOICE_TEXTS[voice_language(voice) or "en-us"]
            clips[voice]["ours"] = [ours(shipped.url, text, voice=voice) for text in texts]
    english = [v for v in voices if (voice_language(v) or "").startswith("en")]
    with serving(replace(config, g2p="misaki")) as misaki:
        for voice in report.progress(english, "ours, misaki"):
            clips[voice]["ours_misaki"] = [
                ours(misaki.url, text, voice=voice) for text in VOICE_TEXTS["en-us"]
            ]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = export_model(Path(tmp), "onnx", config.cache_dir)
        peer = Kokoro(str(model_dir / PYPI_MODEL_NAME), str(model_dir / "voices.npz"))
        for voice in report.progress(voices, "peer"):
            lang = voice_language(voice) or "en-us"
            clips[voice]["peer"] = [
                _pcm(peer.create(text, voice=voice, lang=lang)[0]) for text in VOICE_TEXTS[lang]
            ]
    result: dict[str, Any] = {}
    for voice in report.progress(voices, "judging"):
        lang = voice_language(voice) or "en-us"
        result[voice] = {"language": lang}
        for system, pcms in clips[voice].items():
            result[voice][system] = judge.clips(pcms, VOICE_TEXTS[lang], lang)
    return result


def hard_words(url: str) -> list[dict[str, Any]]:
    """Part 3: each hard word without a lexicon, with one, and as an SSML `<phoneme>`."""
    rows = []
    for word, sentence, phonemes, meant in report.progress(HARD_WORDS, "hard words"):
        ssml = (
            "<speak>"
            + sentence.replace(word, f'<phoneme alphabet="ipa" ph="{phonemes}">{word}</phoneme>')
            + "</speak>"
        )
        row: dict[str, Any] = {"word": word}
        for case, message in (
            ("plain", {"text": sentence}),
            ("lexicon", {"text": sentence, "lexicon": {word: phonemes}}),
            ("ssml", {"text": ssml}),
        ):
            heard = transcribe(ours(url, **message)).lower()
            row[case] = {"heard": heard, "as_meant": any(m in heard for m in meant)}
        rows.append(row)
    return rows


def longest_pause_ms(pcm: bytes) -> float:
    """The longest run of 10 ms blocks under SILENT_RMS inside `pcm` (its edges left out)."""
    audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
    block = SAMPLE_RATE // 100
    blocks = len(audio) // block
    rms = np.sqrt(np.mean(audio[: blocks * block].reshape(blocks, block) ** 2, axis=1))
    loud = np.flatnonzero(rms >= SILENT_RMS)
    quiet = rms[loud[0] : loud[-1] + 1] < SILENT_RMS
    longest = run = 0
    for silent in quiet:
        run = run + 1 if silent else 0
        longest = max(longest, run)
    return longest * 10.0


def breaks(url: str) -> list[dict[str, Any]]:
    """Part 4: the pause a `<break>` makes, measured."""
    rows = []
    for ms in BREAKS_MS:
        text = (
            f'<speak>The first part ends here <break time="{ms}ms"/> and the second part begins now</speak>'
        )
        measured = longest_pause_ms(ours(url, text))
        rows.append({"break_ms": ms, "measured_ms": measured, "within_50_ms": abs(measured - ms) <= 50})
    return rows


def _passes(row: dict[str, Any]) -> bool:
    ours, peer = row["ours"], row["peer"]
    return ours["error_rate"] <= BAR["error_rate"] and ours["mos"] >= peer["mos"] - BAR["mos_gap"]


def tables(result: dict[str, Any]) -> str:
    lines = []
    if "agreement" in result:
        agreement = result["agreement"]
        lines.append(f"English G2P against misaki's gold lexicon ({agreement['words']} words):")
        lines.append(
            report.table(
                ["G2P", "exact", "without stress"],
                [
                    [name, f"{row['exact']:.3f}", f"{row['without_stress']:.3f}"]
                    for name, row in agreement.items()
                    if name != "words"
                ],
            )
        )
    rows = []
    for voice, row in result["voices"].items():
        cells = [voice, row["language"]]
        for system in (row["ours"], row.get("ours_misaki"), row["peer"]):
            cells += (
                ["-", "-", "-"]
                if system is None
                else [system["error_rate"], system["mos"], system["language_p"]]
            )
        rows.append([*cells, "yes" if _passes(row) else "no"])
    systems = ("ours", "misaki", "peer")
    headers = ["voice", "lang", *(f"{m} {s}" for s in systems for m in ("WER", "MOS", "P(lang)")), "bar"]
    lines.append(report.table(headers, rows))
    if "hard_words" in result:
        lines.append(
            report.table(
                ["word", "plain", "lexicon", "<phoneme>"],
                [
                    [r["word"], r["plain"]["heard"], r["lexicon"]["heard"], r["ssml"]["heard"]]
                    for r in result["hard_words"]
                ],
            )
        )
    if "breaks" in result:
        lines.append(
            report.table(
                ["break (ms)", "measured (ms)"], [[r["break_ms"], r["measured_ms"]] for r in result["breaks"]]
            )
        )
    return "\n\n".join(lines)


def figure(result: dict[str, Any]) -> Any:
    fig, (mos_ax, wer_ax) = report.figure("voices: ours beside kokoro-onnx", columns=2, width=12)
    voices = list(result["voices"])
    y = np.arange(len(voices))
    for ax, key, label in ((mos_ax, "mos", "DistillMOS"), (wer_ax, "error_rate", "Whisper error rate")):
        ax.barh(
            y - 0.2, [result["voices"][v]["ours"][key] for v in voices], 0.4, label="ours", color=report.OURS
        )
        ax.barh(
            y + 0.2,
            [result["voices"][v]["peer"][key] for v in voices],
            0.4,
            label="kokoro-onnx",
            color=report.ARTICLE,
        )
        ax.set(yticks=y, yticklabels=voices, xlabel=label)
        ax.invert_yaxis()
        ax.legend(fontsize=7)
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    try:
        import distillmos  # noqa: F401
        import kokoro_onnx  # noqa: F401
    except ImportError as missing:
        return report.skipped("voices", f"{missing.name} is not installed (pip install -e '.[quality]')")
    config = TTSConfig.from_env(threads=2)
    voices = QUICK_VOICES if quick else VOICES
    judge = Judge()
    result: dict[str, Any] = {"agreement": agreement(200 if quick else AGREEMENT_WORDS)}
    result["voices"] = measure_voices(config, voices, judge)
    with serving(config) as served:
        result["hard_words"] = hard_words(served.url)
        result["breaks"] = breaks(served.url)
    english = [row for row in result["voices"].values() if row["language"].startswith("en")]
    result["english_voices_passing"] = f"{sum(_passes(row) for row in english)} of {len(english)}"
    print(tables(result))
    passing = result["english_voices_passing"]
    print(f"English voices within the bar (WER <= 0.05, MOS >= peer's - 0.05): {passing}")
    return report.write(out, "voices", result, figure(result), quick)
