"""The web page in a real browser (headless Chromium): ask, see the answer, get audio scheduled."""

import shutil

import pytest

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on PATH (scripts/test installs Debian's chromium when it can)"
)
def test_the_page_speaks_the_answer(stack):
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
            page.goto(f"{stack.agent_url}/")
            page.fill("#prompt", "Where is my order?")
            page.click("#go")
            page.wait_for_selector("body[data-state=done]", timeout=60_000)
            answer = page.inner_text("#answer")
            chunks = int(page.get_attribute("body", "data-chunks"))
            ttfa = int(page.get_attribute("body", "data-ttfa"))
        finally:
            browser.close()
    assert not errors, errors
    assert answer.startswith("Thanks for waiting")
    assert chunks > 50, "the page should have scheduled every audio chunk"
    assert 0 < ttfa < 10_000
