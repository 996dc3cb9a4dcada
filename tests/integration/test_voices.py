"""The voices through the real container (`python -m tts serve`, tests/conftest.py's `tts_server`): af_heart
when a request names none, on every transport; the 54 voices listed with their language and gender on
both; a British voice in British English; a `<break>` as long as it asks; a lexicon entry and an SSML
`<phoneme>` changing what an independent ASR hears (`asr`)."""

from __future__ import annotations

import base64
import itertools
import json

import httpx
import numpy as np
import pytest

from tests.integration.test_tts_server import collect, connect
from tools.asr import transcribe
from tts.wire.sse import SSEParser

pytestmark = pytest.mark.integration

TEXT = "Thanks for waiting, I found your order."
SILENT_RMS = 0.01  # -40 dBFS in 10 ms blocks, as `benchmarks/voices.py` measures a pause


def post(server, body: dict) -> httpx.Response:
    return httpx.post(f"{server.http}/invocations", json=body, timeout=120, trust_env=False)


def sse_events(response: httpx.Response) -> list[dict]:
    return list(SSEParser().feed(response.content))


async def speak(server, message: dict) -> tuple[list[dict], bytes]:
    async with connect(server) as ws:
        await ws.send(json.dumps({"request_id": "r", **message}))
        controls, audio = await collect(ws)
    return controls, audio.get("r", b"")


async def test_a_request_that_names_no_voice_speaks_af_heart_on_every_transport(tts_server):
    controls, pcm = await speak(tts_server, {"text": TEXT})
    assert controls[0]["voice"] == "af_heart"
    start = sse_events(post(tts_server, {"text": TEXT, "transport": "sse"}))[0]
    assert (start["type"], start["voice"]) == ("audio_stream_start", "af_heart")
    # OpenAI's body without a voice: the same durations as af_heart's (the model's audio length follows
    # the voice's predicted durations), not bm_george's
    lengths = {
        voice: len(post(tts_server, {"input": TEXT, "response_format": "pcm", **body}).content)
        for voice, body in (
            ("default", {}),
            ("af_heart", {"voice": "af_heart"}),
            ("bm_george", {"voice": "bm_george"}),
        )
    }
    assert lengths["default"] == lengths["af_heart"] == len(pcm) != lengths["bm_george"]


async def test_the_54_voices_are_listed_with_language_and_gender_on_both_transports(tts_server):
    async with connect(tts_server) as ws:
        await ws.send(json.dumps({"type": "voices"}))
        on_the_session = await ws.receive()
    over_http = post(tts_server, {"type": "voices"}).json()
    assert on_the_session == over_http
    assert len(over_http["voices"]) == 54 and over_http["default"] == "af_heart"
    entries = {entry["id"]: entry for entry in over_http["data"]}
    assert entries["bm_george"] == {
        "id": "bm_george",
        "name": "bm_george",
        "language": "en-gb",
        "gender": "male",
    }
    assert entries["ff_siwis"]["language"] == "fr-fr" and entries["zm_yunxi"]["language"] == "cmn"


async def test_a_voice_speaks_its_language_unless_the_request_names_one(tts_server):
    controls, _ = await speak(tts_server, {"text": "Bonjour tout le monde.", "voice": "ff_siwis"})
    assert controls[-1]["type"] == "synthesis_complete"
    refused = post(tts_server, {"text": TEXT, "voice": "bm_george", "lang": "xx-yy"})
    assert refused.status_code == 400 and refused.json()["code"] == "unknown_language"


def longest_pause_ms(pcm: bytes) -> float:
    audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
    blocks = len(audio) // 240
    rms = np.sqrt(np.mean(audio[: blocks * 240].reshape(blocks, 240) ** 2, axis=1))
    loud = np.flatnonzero(rms >= SILENT_RMS)
    longest = run = 0
    for silent in rms[loud[0] : loud[-1] + 1] < SILENT_RMS:
        run = run + 1 if silent else 0
        longest = max(longest, run)
    return longest * 10.0


@pytest.mark.parametrize("break_ms", [500, 1000])
async def test_a_break_is_the_pause_it_asks_for_and_the_words_stay_inside_the_audio(tts_server, break_ms):
    text = (
        f'<speak>The first part ends here <break time="{break_ms}ms"/> and the second part begins now</speak>'
    )
    async with connect(tts_server) as ws:
        await ws.send(json.dumps({"text": text, "request_id": "r", "timestamps": True}))
        controls, audio = await collect(ws)
    pcm = audio["r"]
    assert abs(longest_pause_ms(pcm) - break_ms) <= 50
    words = [w for c in controls if c["type"] == "words" for w in c["words"]]
    assert " ".join(w["text"] for w in words) == "The first part ends here and the second part begins now"
    assert all(a["end_ms"] <= b["start_ms"] for a, b in itertools.pairwise(words))
    assert words[-1]["end_ms"] <= len(pcm) / 48
    assert words[5]["start_ms"] - words[4]["end_ms"] >= break_ms - 50, "the pause lies between the two parts"


@pytest.mark.asr
@pytest.mark.parametrize("how", ["lexicon", "ssml"])
async def test_a_pronunciation_changes_what_asr_hears_for_a_word_it_misheard(tts_server, how):
    """A name said as its owner says it: espeak-ng (the default English G2P) reads `Nguyen` as spelled
    (Whisper writes "nguyen"); given as "win" by a lexicon entry or a `<phoneme>`, Whisper hears a word
    that sounds so ("win", or its homophone "when"), not the name (`python -m benchmarks voices` has the
    other hard words)."""
    word, sentence, phonemes = "Nguyen", "Please call Nguyen after lunch.", "wˈɪn"
    plain = transcribe((await speak(tts_server, {"text": sentence}))[1]).lower()
    if how == "lexicon":
        fixed = {"text": sentence, "lexicon": {word: phonemes}}
    else:
        fixed = {"text": f'<speak>Please call <phoneme ph="{phonemes}">{word}</phoneme> after lunch.</speak>'}
    heard = transcribe((await speak(tts_server, fixed))[1]).lower()
    said_so = {"win", "when", "wynn"}  # how Whisper writes "wɪn"
    assert not said_so & set(plain.replace(".", " ").split()), plain  # "nguyen", or "new year"
    heard_words = heard.replace(".", " ").split()
    assert "nguyen" not in heard_words and said_so & set(heard_words), heard


async def test_a_lexicon_over_the_openai_body_and_a_bad_one_is_a_typed_error(tts_server):
    ok = post(tts_server, {"input": "Call Nguyen.", "response_format": "pcm", "lexicon": {"Nguyen": "wˈɪn"}})
    assert ok.status_code == 200 and len(ok.content) > 24_000
    bad = post(tts_server, {"input": "Call Nguyen.", "lexicon": {"Nguyen": "wˈɪn☃"}})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "unknown_phoneme"
    unbalanced = post(tts_server, {"text": "<speak>Hi <sub alias='x'>y</speak>"})
    assert unbalanced.status_code == 400 and unbalanced.json()["code"] == "invalid_ssml"
    audio = sse_events(post(tts_server, {"text": "<speak><break time='300ms'/></speak>", "transport": "sse"}))
    chunks = b"".join(base64.b64decode(e["data"]) for e in audio if e["type"] == "audio_chunk")
    assert len(chunks) == 300 * 48, "a break alone is its silence"
