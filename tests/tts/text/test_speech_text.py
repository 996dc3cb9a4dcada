"""Speech text: what an agent writes -> what a listener hears (tts/text/speech_text.py), as a table.

Each row is what a language model typically writes and what espeak-ng must be given for it to be heard
as a person would read it aloud. The same table runs through the container's message parser, so every
path that reaches the model (WebSocket, POST, the agent's chunks) says the same.
"""

from __future__ import annotations

import json

import pytest

from tts.text.speech_text import RULES, MarkdownBlocks, speech_text
from tts.wire.protocol import Catalog, ProtocolError, Synthesize, parse_message

CASES = [
    # markdown emphasis and code
    ("It is **very** important: read the *manual*.", "It is very important: read the manual."),
    ("This is __bold__ and _italic_ text.", "This is bold and italic text."),
    ("A ***strong emphasis*** here.", "A strong emphasis here."),
    ("That is ~~wrong~~ right.", "That is wrong right."),
    ("Use 1-2 cups and sleep 7–9 hours.", "Use 1 to 2 cups and sleep 7 to 9 hours."),
    ("Call 555-1234 on 2026-12-01.", "Call 555-1234 on 2026-12-01."),
    ("Run `pip install kokoro` first.", "Run pip install kokoro first."),
    ("Don`t forget `it` and it`s done.", "Don't forget it and it's done."),
    ("```python\nprint('hi')\n```\nThat prints hi.", "That prints hi."),
    ("Before.\n~~~\ncode\n~~~\nAfter.", "Before.\nAfter."),
    ("Keep snake_case_names readable.", "Keep snake case names readable."),
    # headings, lists, quotes, rules, tables
    ("# Summary\nFirst rest well.", "Summary.\nFirst rest well."),
    ("## Step two ##", "Step two."),
    ("### What next?", "What next?"),
    ("- Sleep early\n- Drink water", "Sleep early.\nDrink water."),
    ("* Dim the lights.\n+ Read a book!", "Dim the lights.\nRead a book!"),
    ("1. Keep a schedule\n2) Avoid screens", "1. Keep a schedule.\n2. Avoid screens."),
    ("- [ ] Buy milk\n- [x] Call mom", "Buy milk.\nCall mom."),
    ("> Simplicity is the soul of efficiency.", "Simplicity is the soul of efficiency."),
    ("Part one.\n\n---\n\nPart two.", "Part one.\nPart two."),
    ("| Name | Age |\n|------|----:|\n| Ann | 31 |", "Name, Age.\nAnn, 31."),
    ("**Tips:**\n1. **Keep a schedule** - it helps.", "Tips:\n1. Keep a schedule - it helps."),
    ("Line with <b>html</b> tags.", "Line with html tags."),
    # links and URLs
    ("See [the guide](https://example.com/guide).", "See the guide."),
    ('Read [the docs](https://docs.example.com/a_(b) "Docs") today.', "Read the docs today."),
    ("![a cat](cat.png) Cute.", "a cat Cute."),
    ("Go to https://example.com/guide", "Go to example dot com slash guide"),
    ("Visit www.example.org.", "Visit example dot org."),
    ("Open <https://example.com/?q=1>", "Open example dot com"),
    ("Email john@example.com today.", "Email john@example.com today."),
    # emoji and symbols
    ("Great job! 🎉", "Great job!"),
    ("👍🏽 Thanks", "Thanks"),
    ("I ❤️ Python.", "I Python."),
    ("Family: 👨‍👩‍👧", "Family:"),
    ("Tom & Jerry", "Tom and Jerry"),
    ("Q&amp;A time", "Q and A time"),
    ("Fix bug #42 today.", "Fix bug number 42 today."),
    ("Play it in C# or F#.", "Play it in C sharp or F sharp."),
    ("It takes ~5 minutes.", "It takes about 5 minutes."),
    ("Input -> output.", "Input to output."),
    ("Cause → effect.", "Cause to effect."),
    ("Speed ≈ 3 × 4.", "Speed about 3 times 4."),
    ("Stars ★★★ and ™ marks.", "Stars and marks."),
    # numbers: decimals and versions get no pause; what espeak reads well is kept
    ("Version 2.0 is out.", "Version 2 point 0 is out."),
    ("Pi is 3.14.", "Pi is 3 point 1 4."),
    ("Upgrade to v2.1.3 now.", "Upgrade to version 2 point 1 point 3 now."),
    ("It costs $4.50.", "It costs 4 dollars 50 cents."),
    ("It costs $1,000.", "It costs 1000 dollars."),
    ("Only €1.00 and £3.", "Only 1 euro and 3 pounds."),
    ("We had 12,500 visitors.", "We had 12500 visitors."),
    ("Meet at 10:30 a.m. on the 3rd.", "Meet at 10:30 a.m. on the 3rd."),
    ("It is 20°C and 50% humid.", "It is 20°C and 50% humid."),
    ("Walk 5 km, then rest.", "Walk 5 km, then rest."),
    ("The year 2024 was warm.", "The year 2024 was warm."),
    ("The answer is 42.", "The answer is 42."),
    # plain text is untouched
    ('Dr. Smith said: "Rest well!"', 'Dr. Smith said: "Rest well!"'),
    ("What is the capital of France?", "What is the capital of France?"),
    ("Don't worry, it's fine.", "Don't worry, it's fine."),
    ("Wait , what ?", "Wait, what?"),
    # nothing for the ear
    ("🎉🎉", ""),
    ("```\nonly code\n```", ""),
    ("---", ""),
]


@pytest.mark.parametrize(("written", "heard"), CASES, ids=[w[:40] for w, _ in CASES])
def test_speech_text(written: str, heard: str):
    assert speech_text(written) == heard


@pytest.mark.parametrize(("written", "heard"), CASES, ids=[w[:40] for w, _ in CASES])
def test_speech_text_is_idempotent(written: str, heard: str):
    """The agent may already have passed a chunk through it; the container passes it again."""
    assert speech_text(heard) == heard


def test_the_table_is_long_enough_and_every_rule_is_exercised():
    assert len(CASES) >= 40
    used = {rule.name for rule in RULES for written, _ in CASES if rule.pattern.search(written)}
    assert used == {rule.name for rule in RULES}


def test_english_words_only_for_english():
    assert speech_text("Version 2.0 🎉 **neu** & #3", "de") == "Version 2.0 neu & 3"


def test_a_code_block_across_chunks_is_not_spoken():
    blocks = MarkdownBlocks()
    chunks = ["Here is code:", "```python", "x = 1", "print(x)", "```", "It prints **1**."]
    assert [blocks.speak(c) for c in chunks] == ["Here is code:", "", "", "", "", "It prints 1."]


CATALOG = Catalog(
    voices=frozenset({"af_heart"}),
    languages=frozenset({"en-us", "fr-fr"}),
    default_voice="af_heart",
    default_lang="en-us",
    max_text_chars=4000,
)


@pytest.mark.parametrize(
    ("written", "heard"), [c for c in CASES if c[1]], ids=[w[:40] for w, h in CASES if h]
)
def test_the_container_speaks_the_speech_text(written: str, heard: str):
    message = parse_message(json.dumps({"text": written}), CATALOG)
    assert isinstance(message, Synthesize)
    assert message.text == heard.replace("\n", " ")  # one utterance: every line ends its sentence


@pytest.mark.parametrize("written", [w for w, h in CASES if not h])
def test_the_container_refuses_text_with_nothing_to_say(written: str):
    with pytest.raises(ProtocolError) as error:
        parse_message(json.dumps({"text": written}), CATALOG)
    assert error.value.code == "nothing_to_speak"
