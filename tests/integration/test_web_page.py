"""The web page in a real browser (headless Chromium): ask, see the answer, get audio scheduled.

The stack here runs the emulated Bedrock's default model (SmolLM2 on the CPU), so the page answers the
question it is asked."""

import dataclasses
import shutil

import pytest

from agent.local import local_stack
from emulator.config import EmulatorConfig
from emulator.smollm import prepare_model

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def smollm2_stack(tmp_path_factory):
    prepare_model(EmulatorConfig().llm_cache_dir)  # a fresh machine downloads and dequantizes it here, once
    config = dataclasses.replace(
        EmulatorConfig(), http_port=0, h2_port=0, home=tmp_path_factory.mktemp("emu"), llm_backend="smollm2"
    )
    with local_stack(config) as running:
        yield running


@pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on PATH (scripts/test installs Debian's chromium when it can)"
)
def test_the_page_speaks_the_answer_to_the_question(smollm2_stack):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
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
            page.goto(f"{smollm2_stack.agent_url}/")
            page.fill("#prompt", "What is the capital of France?")
            page.click("#go")
            page.wait_for_selector("body[data-state=done]", timeout=120_000)
            answer = page.inner_text("#answer")
            chunks = int(page.get_attribute("body", "data-chunks"))
            ttfa = int(page.get_attribute("body", "data-ttfa"))
        finally:
            browser.close()
    assert not errors, errors
    assert "Paris" in answer
    assert chunks > 3, "the page should have scheduled every audio chunk"
    assert 0 < ttfa < 120_000  # a fresh stack's first answer may wait for the model to finish loading
