"""Intelligibility: what the container says is transcribed by an independent ASR (Whisper base).

Eight sentences, 80 words, per voice: on four (40 words) one word more or less moved jf_nezumi across
the line by chance (whole-segment audio already has 3 errors there: "needed tuna" for "need it
sooner"). Measured with the default streamed decoding: af_heart 0.025 ("Please hold on when they check"),
bm_george 0.013 ("It's shipped"); earlier, with the five Japanese voices of the int8 release read in
English, jm_kumo 0.013 and jf_nezumi 0.075.
"""

import json

import pytest

from tests.integration.test_tts_server import collect
from tools.asr import transcribe, word_error_rate
from tools.tts_client import connect

pytestmark = [pytest.mark.integration, pytest.mark.asr]

SENTENCES = [
    "Thanks for waiting, I found your order.",
    "It shipped yesterday from our Denver warehouse and should arrive on Thursday.",
    "If you need it sooner, I can upgrade the shipping at no cost.",
    "Would you like me to do that now?",
    "The train to Boston leaves from platform nine.",
    "Please hold on while I check that for you.",
    "It will be sunny this afternoon, with a light breeze from the west.",
    "Your package was delivered to the front desk at noon.",
]


# The default voice in the default run; a British one, 18 s more, in CI's `slow` phase.
@pytest.mark.parametrize("voice", ["af_heart", pytest.param("bm_george", marks=pytest.mark.slow)])
async def test_word_error_rate_is_at_most_ten_percent(tts_server, voice):
    async with connect(tts_server.ws) as ws:
        for n, text in enumerate(SENTENCES):
            await ws.send(json.dumps({"text": text, "voice": voice, "request_id": str(n)}))
        _, audio = await collect(ws, until=len(SENTENCES))
    reference = " ".join(SENTENCES)
    heard = " ".join(transcribe(audio[str(n)]) for n in range(len(SENTENCES)))
    wer = word_error_rate(reference, heard)
    assert wer <= 0.10, f"WER {wer:.2f}: heard {heard!r}"


def test_the_asr_is_not_a_rubber_stamp():
    """Silence and a wrong reference must score badly, or the test above proves nothing."""
    assert (
        transcribe(b"\x00\x00" * 24000).strip() in {"", "you", "You"}
        or word_error_rate("thanks for waiting", transcribe(b"\x00\x00" * 24000)) > 0.5
    )
    assert word_error_rate("thanks for waiting", "tanks for weighting") > 0.5
