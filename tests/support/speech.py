"""How the container tests judge a session's streamed speech: beside the model's own whole-segment
rendering of each text, decoded in the test's process from the same weights.

Why not Whisper alone. A container streams each sentence in steps its scheduler sizes to the time it
measures, so where the seams fall depends on how fast and how busy the machine is, and Whisper's
transcript of one sentence flips with them: the same features decoded with seams at frames 28 and 76
were heard "It's sharp the yesterday" (WER 0.38) by both engines, at a log-mel distance of 0.12 from
the whole-segment audio; CI heard "It's Shep the Astor day" from the GPU image (0.62), and this machine
"Let's ship the ass today" (0.62, at a distance of 0.32). So each part must match its reference: the
same length to the sample (the text side is deterministic on one machine) and a log-mel distance within
FIDELITY (32 sessions through the torch server measured 0.14-0.36; two whole-segment renders of the
torch engine differ by 0.02, its generator's noise). Whisper must hear every reference as its text, and
the session's parts, in order, as speech of their texts (WER over them all within HEARD_WER).
"""

from __future__ import annotations

import sys

import numpy as np

from stt.wire.protocol import pcm_samples
from tools.asr import transcribe, word_error_rate
from tools.fidelity import mel_distance
from tts.engines.base import SpeechEngine
from tts.wire.audio import float_to_pcm16

# The streamed audio's log-mel distance from the whole-segment rendering: measured 0.14-0.36 (above).
FIDELITY = 0.45
# Whisper over a session's parts: "Let's ship the ass today" is common (0.33 over two sentences), the
# worst seen was 7 of 15 words ("It's sharp the ass today, and should arrive on the stay.", 0.47);
# silence, noise or another text is near 1.
HEARD_WER = 0.6
# Whisper on the whole-segment reference of one sentence (measured 0.0 in 25 of 25 renders).
REFERENCE_WER = 0.15


def whole_segment(engine: SpeechEngine, text: str, voice: str) -> np.ndarray:
    """The model's audio for `text`, each segment decoded in one piece."""
    segments = engine.segments(text, "en-us")
    return np.concatenate([engine.decode(engine.features(tokens, voice, 1.0)) for tokens in segments])


def assert_speaks(engine: SpeechEngine, voice: str, texts: dict[str, str], audio: dict[str, bytes]) -> None:
    """Each request's streamed PCM (`audio`, by request id) is its text (`texts`) as `engine` says it."""
    assert set(audio) == set(texts), f"audio for {sorted(audio)}, asked {sorted(texts)}"
    for request_id, text in texts.items():
        reference = whole_segment(engine, text, voice)
        heard = transcribe(float_to_pcm16(reference))
        assert word_error_rate(text, heard) <= REFERENCE_WER, (
            f"the whole-segment {text!r} was heard {heard!r}"
        )
        streamed = pcm_samples(audio[request_id])
        assert len(streamed) == len(reference), (request_id, len(streamed), len(reference))
        distance = mel_distance(reference, streamed)
        print(f"{request_id}: log-mel distance {distance:.3f} from whole-segment", file=sys.stderr)
        assert distance < FIDELITY, f"{request_id}: log-mel distance {distance:.3f}"
    heard = " ".join(transcribe(audio[request_id]) for request_id in texts)
    wer = word_error_rate(" ".join(texts.values()), heard)
    print(f"the session: heard {heard!r} (WER {wer:.2f})", file=sys.stderr)
    assert wer <= HEARD_WER, f"WER {wer:.2f}, heard {heard!r}"
