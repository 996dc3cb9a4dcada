"""The web page in a real browser (headless Chromium): ask, see the answer, get audio scheduled, and see
the timeline of text and audio arriving; Compare runs both modes and draws both timelines. Most tests use
the paced script model (a fixed answer); one runs the emulated Bedrock's default model (SmolLM2 on the
CPU) and checks the page answers the question it is asked."""

import contextlib
import dataclasses
import shutil

import pytest

from emulator.bedrock.smollm import prepare_model
from emulator.config import EmulatorConfig
from local_stack import local_stack

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        (shutil.which("chromium") or shutil.which("chromium-browser")) is None,
        reason="no Chromium on PATH (scripts/test installs Debian's chromium when it can)",
    ),
]


@contextlib.contextmanager
def browser_page(url: str):
    """The page at `url` loaded in headless Chromium, and the page errors it raises."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
            headless=True,
            args=[
                "--no-sandbox",
                "--autoplay-policy=no-user-gesture-required",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
            ],
        )
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            yield page, errors
        finally:
            browser.close()


@pytest.fixture
def web(stack):
    with browser_page(f"{stack.agent_url}/") as opened:
        yield opened


@pytest.fixture(scope="module")
def smollm2_stack(tmp_path_factory):
    prepare_model(EmulatorConfig().llm_cache_dir)  # a fresh machine downloads and dequantizes it here, once
    config = dataclasses.replace(
        EmulatorConfig(), http_port=0, h2_port=0, home=tmp_path_factory.mktemp("emu"), llm_backend="smollm2"
    )
    with local_stack(config) as running:
        yield running


def test_the_page_answers_the_question_it_is_asked(smollm2_stack):
    with browser_page(f"{smollm2_stack.agent_url}/") as (page, errors):
        page.fill("#prompt", "What is the capital of France?")
        page.click("#go")
        page.wait_for_selector("body[data-state=done]", timeout=120_000)
        answer = page.inner_text("#answer")
        chunks = int(page.get_attribute("body", "data-chunks"))
        ttfa = int(page.get_attribute("body", "data-ttfa"))
    assert not errors, errors
    assert "Paris" in answer
    assert chunks > 3, "the page should have scheduled every audio chunk"
    assert 0 < ttfa < 120_000  # a fresh stack's first answer may wait for the model to finish loading


def timeline_rows(page) -> list[dict]:
    return page.eval_on_selector_all(
        "#timeline g.run",
        """rows => rows.map(g => ({
            mode: g.dataset.mode,
            ttfa: Number(g.dataset.ttfa),
            text: Number(g.dataset.textEvents),
            audio: Number(g.dataset.audioEvents),
            ticks: g.querySelectorAll('line.text-tick, line.audio-tick').length,
        }))""",
    )


def test_the_page_speaks_the_answer_and_draws_its_timeline(web):
    page, errors = web
    page.fill("#prompt", "Where is my order?")
    page.click("#go")
    page.wait_for_selector("body[data-state=done]", timeout=120_000)
    answer = page.inner_text("#answer")
    chunks = int(page.get_attribute("body", "data-chunks"))
    ttfa = int(page.get_attribute("body", "data-ttfa"))
    rows = timeline_rows(page)
    assert not errors, errors
    assert answer.startswith("Thanks for waiting")
    assert chunks > 50, "the page should have scheduled every audio chunk"
    assert 0 < ttfa < 60_000  # a sanity bound, not a speed target (that is `python -m benchmarks agent`)
    assert len(rows) == 1
    (row,) = rows
    assert row["mode"] == "bidi" and row["ttfa"] == ttfa and row["audio"] == chunks
    assert row["text"] > 10, "every text_delta is a tick on the text lane"
    assert row["ticks"] == row["text"] + row["audio"]


@pytest.mark.timeout(420)
def test_compare_runs_both_modes_and_draws_two_timelines(web):
    page, errors = web
    page.click("#compare")
    page.wait_for_selector("body[data-state=done]", timeout=300_000)
    rows = timeline_rows(page)
    labels = page.text_content("#timeline")
    assert not errors, errors
    assert [row["mode"] for row in rows] == ["bidi", "batch"]
    bidi, batch = rows
    assert bidi["audio"] > 50 and batch["audio"] > 50
    assert bidi["text"] == batch["text"], "the paced script model gives both modes the same reply"
    # batch speaks only after the whole answer is written; bidi while it is still being written
    assert 0 < bidi["ttfa"] < batch["ttfa"]
    assert f"first audio {bidi['ttfa']} ms" in labels and f"first audio {batch['ttfa']} ms" in labels
