"""A house rule, read from the source (tests/test_house.py has the rest): each of the product's shared
facts is defined in `facts.py` alone."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.support.paths import REPO
from tests.test_house import SHARED, modules

# The product's shared facts (facts.py): each is assigned there and nowhere else, by its name or by its
# value (a constant, a default, a dict value, a keyword's default). Tests aside: they may spell a value out.
FACT_NAMES = ("SAMPLE_RATE", "CHANNELS", "PCM_BYTES_PER_S", "AUDIO_FORMATS", "MEDIA_TYPES", "DEFAULT_VOICE")
FACT_NAMES += ("TTS_ENDPOINT", "MODES", "STT_SAMPLE_RATE", "STT_PCM_BYTES_PER_S", "STT_ENDPOINT")
FACT_NAMES += ("AGENT_RUNTIME",)
FACT_VALUES = (
    24_000,
    48_000,
    16_000,
    32_000,
    "whisper-stt",
    "jm_kumo",
    "kokoro-82m",
    "voice_agent",
    ("pcm", "wav", "mp3", "aac", "opus"),
    ("bidi", "batch"),
)


def literal(node: ast.expr | None) -> object:
    try:
        return ast.literal_eval(node) if node is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def defined_facts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, fact) for every assignment in `path` of a fact's name or of a fact's value."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[ast.expr] = []
        values: list[ast.expr | None] = []
        if isinstance(node, ast.Assign):
            targets, values = node.targets, [node.value]
        elif isinstance(node, ast.AnnAssign):
            targets, values = [node.target], [node.value]
        elif isinstance(node, ast.Dict):
            values = list(node.values)
        elif isinstance(node, ast.arguments):
            values = [*node.defaults, *node.kw_defaults]
        elif isinstance(node, ast.keyword):
            values = [node.value]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in FACT_NAMES:
                yield node.lineno, target.id
        for value in values:
            constant = literal(value)
            if isinstance(constant, list):
                constant = tuple(constant)
            if value is not None and not isinstance(constant, bool) and constant in FACT_VALUES:
                yield value.lineno, repr(constant)


def test_each_shared_fact_is_defined_once_in_facts():
    wrong = [
        f"{path.relative_to(REPO)}:{line} defines {fact}"
        for name, path in modules().items()
        if name not in SHARED
        for line, fact in defined_facts(path)
    ]
    assert not wrong, "\n".join(wrong)
    assert {fact for _, fact in defined_facts(REPO / "facts.py")} >= set(FACT_NAMES)


def test_the_facts_rule_sees_every_way_of_defining_one(tmp_path: Path):
    source = tmp_path / "m.py"
    source.write_text(
        'SAMPLE_RATE = 16\nrate: int = 24_000\nvoices = {"x": "jm_kumo"}\n'
        'def f(endpoint="kokoro-82m"): ...\ng(formats=["pcm", "wav", "mp3", "aac", "opus"])\n'
        'unrelated = ("bidi", "stream")\n'
    )
    assert [line for line, _ in defined_facts(source)] == [1, 2, 3, 4, 5]
