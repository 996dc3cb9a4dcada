"""The web page in a real browser (headless Chromium) behaves like a player: ask, see the answer, hear it
on the page's audio clock, see the timeline of text and audio arriving with the moment the answer was
complete; Stop stays live while speech is left to play, a new question silences the old answer, Replay
plays it again, Compare draws both modes, and an empty question gets a plain message and no chart.
Captions mark the word being heard in time with the audio; Stop, or a new question over a speaking
answer, interrupts it, and the next model request (the emulated Bedrock's record) carries the words heard.
Most tests use the paced script model (a fixed answer); one runs the emulated Bedrock's default model
(SmolLM2 on the CPU) and checks the page answers the question it is asked.

Headless Chromium has no sound device: `--disable-audio-output` gives it Chromium's fake audio output,
whose clock runs in real time (an AudioContext's currentTime advanced 1.02 s in 1 s here), so playback is
real page state: the player's clock (`player.playedMs()`) and the signal reaching the output, read by
an AnalyserNode (`player.level()`), not a stub."""

import contextlib
import dataclasses
import json
import shutil
import time

import httpx
import pytest

from emulator.config import EmulatorConfig
from emulator.llm.smollm.weights import prepare_model
from local_stack.stack import local_stack
from tests.integration.conftest import LONG_PROMPT
from tools.listener import Arrival, listen

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        (shutil.which("chromium") or shutil.which("chromium-browser")) is None,
        reason="no Chromium on PATH (scripts/test installs Debian's chromium when it can)",
    ),
]

# Speech is heard as a level above this (16-bit speech peaks near 0.3; silence reads exactly 0).
AUDIBLE = 0.01
# Listening this long always hears speech while an answer plays: the pause between two sentences is shorter.
HEARING_MS = 1_000
# The player's meter looks at the last 21 ms of output, so it still holds speech that long after Stop.
METER_WINDOW_MS = 100


def csp_refusals(console_text: str) -> list[str]:
    """What the page's Content-Security-Policy refused, which Chromium reports only on the console."""
    return [console_text] if "Content Security Policy" in console_text else []


@contextlib.contextmanager
def browser_page(url: str, extra_args: tuple[str, ...] = ()):
    """The page at `url` loaded in headless Chromium (with `extra_args` on its command line), and the
    page errors it raises (with anything its Content-Security-Policy refused)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
            headless=True,
            args=[
                "--no-sandbox",
                "--autoplay-policy=no-user-gesture-required",
                "--disable-audio-output",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                *extra_args,
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda message: errors.extend(csp_refusals(message.text)))
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


def state(page) -> str:
    return page.get_attribute("body", "data-state")


def loudest(page, ms: int = 400) -> float:
    """The loudest sample reaching the page's audio output over `ms`."""
    return page.evaluate(
        """async (ms) => { let max = 0; const end = performance.now() + ms;
            while (performance.now() < end) { max = Math.max(max, player.level());
                await new Promise((r) => setTimeout(r, 10)); }
            return max; }""",
        ms,
    )


def clock(page) -> dict:
    return page.evaluate(
        "({ t: player.ctx.currentTime, played: player.playedMs(), scheduled: player.scheduledMs() })"
    )


def wait_until(page, condition: str, timeout_ms: int = 30_000) -> None:
    """Wait until the JavaScript expression `condition` holds on the page. Not `page.wait_for_function`,
    which evaluates its predicate with `eval`: the page's Content-Security-Policy refuses that (no
    'unsafe-eval'), as it should; a function given to `page.evaluate` is compiled by the browser's
    debugging protocol, which the policy does not govern."""
    met = page.evaluate(
        f"""async () => {{ const end = performance.now() + {timeout_ms};
            while (!({condition})) {{ if (performance.now() > end) return false;
                                      await new Promise((r) => setTimeout(r, 20)); }}
            return true; }}"""
    )
    assert met, f"not within {timeout_ms} ms: {condition}"


def wait_until_the_stream_is_complete(page, timeout_ms: int = 120_000) -> None:
    """Every event of the answer has arrived (the page records its chunk count then)."""
    wait_until(page, "document.body.dataset.chunks !== undefined", timeout_ms)


def timeline_rows(page) -> list[dict]:
    return page.eval_on_selector_all(
        "#timeline g.run",
        """rows => rows.map(g => ({
            mode: g.dataset.mode,
            ttfa: Number(g.dataset.ttfa),
            complete: Number(g.dataset.complete),
            stopped: Number(g.dataset.stopped),
            text: Number(g.dataset.textEvents),
            audio: Number(g.dataset.audioEvents),
            pieces: [...g.querySelectorAll('rect.audio-piece')].map(r => Number(r.dataset.chunks)),
            textTicks: g.querySelectorAll('line.text-tick').length,
            completeMarks: g.querySelectorAll('line.complete').length,
            stopMarks: g.querySelectorAll('line.stop').length,
            stalls: Number(g.dataset.stalls),
            stallMarks: g.querySelectorAll('rect.stall').length,
            lead: g.querySelector('text.lead')?.textContent ?? null,
            firstAudioLabel: [...g.querySelectorAll('text')].map(t => t.textContent)
                .find(t => t.startsWith('first audio')) ?? null,
        }))""",
    )


def assert_lead_matches(row: dict) -> None:
    """The row's lead line says how long before (or after) the answer was complete speech began, as its
    marks place them (to the tenth of a second it shows)."""
    lead_ms = row["complete"] - row["ttfa"]
    if row["lead"] == "speech began as the answer was complete":
        assert abs(lead_ms) < 51, row
        return
    words = row["lead"].split()
    assert words[:2] == ["speech", "began"] and words[3:] == [
        "s",
        words[4],
        "the",
        "answer",
        "was",
        "complete",
    ]
    assert words[4] == ("before" if lead_ms > 0 else "after"), row
    assert float(words[2]) == pytest.approx(abs(lead_ms) / 1000, abs=0.051), row


def contrast_on_white(rgb: str) -> float:
    """WCAG contrast ratio of a CSS `rgb(r, g, b)` colour against white."""
    channels = [int(v) / 255 for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return 1.05 / (luminance + 0.05)


def test_the_page_answers_the_question_it_is_asked(smollm2_stack):
    with browser_page(f"{smollm2_stack.agent_url}/") as (page, errors):
        page.fill("#prompt", "What is the capital of France?")
        page.click("#go")
        page.wait_for_selector("body[data-state=done]", timeout=180_000)
        answer = page.inner_text("#answer")
        chunks = int(page.get_attribute("body", "data-chunks"))
        ttfa = int(page.get_attribute("body", "data-ttfa"))
    assert not errors, errors
    assert "Paris" in answer
    assert chunks > 3, "the page should have scheduled every audio chunk"
    assert 0 < ttfa < 120_000  # a fresh stack's first answer may wait for the model to finish loading


def test_the_page_speaks_the_answer_and_draws_its_timeline(web):
    page, errors = web
    page.fill("#prompt", "Where is my order?")
    page.click("#go")
    page.wait_for_selector("body[data-state=thinking]", timeout=10_000)
    page.wait_for_selector("body[data-state=speaking]", timeout=120_000)
    assert page.inner_text("#status").startswith("Speaking")
    page.wait_for_selector("body[data-state=done]", timeout=180_000)
    answer = page.inner_text("#answer")
    chunks = int(page.get_attribute("body", "data-chunks"))
    ttfa = int(page.get_attribute("body", "data-ttfa"))
    played = clock(page)
    (row,) = timeline_rows(page)
    assert not errors, errors
    assert answer.startswith("Thanks for waiting")
    assert chunks > 50, "the page should have scheduled every audio chunk"
    assert 0 < ttfa < 60_000  # a sanity bound, not a speed target (that is `python -m benchmarks agent`)
    assert played["played"] == pytest.approx(played["scheduled"], abs=1) and played["played"] > 5_000
    assert row["mode"] == "bidi" and row["ttfa"] == ttfa and row["audio"] == chunks
    assert row["text"] > 10 and row["textTicks"] == row["text"], "every text_delta is a tick on the text lane"
    # one bar per spoken piece (each sentence the agent sent), together holding every chunk
    assert len(row["pieces"]) >= 3 and sum(row["pieces"]) == chunks
    assert row["completeMarks"] == 1 and row["complete"] > 0
    assert_lead_matches(row)
    assert row["lead"] in page.inner_text("#metrics")
    # where a listener would have waited for audio: a mark each, and the count in the metrics line
    assert row["stallMarks"] == row["stalls"] >= 0
    assert ("no stall" if row["stalls"] == 0 else f"{row['stalls']} stall") in page.inner_text("#metrics")
    for selector, prop in (
        ("rect.audio-piece", "fill"),
        ("line.text-tick", "stroke"),
        ("line.complete", "stroke"),
    ):
        colour = page.eval_on_selector(f"#timeline {selector}", f"e => getComputedStyle(e).{prop}")
        assert contrast_on_white(colour) >= 3, (selector, colour)


def test_the_page_hears_stalls_by_the_agent_s_listener_model(web):
    """The page's `listen` (JavaScript) and tools.listener.listen give the same stalls for the same
    arrivals: late audio, audio in time, jitter under the floor."""
    page, errors = web
    arrivals = [(200, 300), (700, 1000), (1600, 500), (2800, 100), (2901, 100), (3000, 100)]
    seen = page.evaluate("(a) => listen(a.map(([at, ms]) => ({ at, ms })))", arrivals)
    modelled = listen([Arrival(at / 1000, ms / 1000) for at, ms in arrivals])
    assert not errors, errors
    assert len(seen) == len(modelled.stalls) == 2
    for js, py in zip(seen, modelled.stalls, strict=True):
        assert (js["at"], js["heardMs"], js["ms"]) == pytest.approx(
            (py.at_s * 1000, py.after_audio_s * 1000, py.length_s * 1000), abs=0.01
        )


# slow: it plays 40 s of speech in real time, twice (31 s); Stop and a new question are live in
# test_a_new_question_silences_the_old_answer_and_clears_its_timeline, in the default run.
@pytest.mark.slow
def test_stop_is_live_during_leftover_playback_and_replay_plays_the_answer_again(web):
    """The long answer (40 s of speech) leaves seconds to play once it has all arrived, with synthesis
    anywhere below real time: the test makes its time instead of assuming a fast machine."""
    page, errors = web
    page.fill("#prompt", LONG_PROMPT)
    page.click("#go")
    wait_until_the_stream_is_complete(page, timeout_ms=240_000)
    left = clock(page)
    assert state(page) == "speaking" and page.is_enabled("#stop")
    assert left["scheduled"] - left["played"] > HEARING_MS + 500, "audio is left to play once all arrived"
    assert loudest(page, HEARING_MS) > AUDIBLE

    page.click("#stop")
    page.wait_for_timeout(METER_WINDOW_MS)
    before = clock(page)
    silent = loudest(page)
    after = clock(page)
    assert state(page) == "stopped" and page.inner_text("#status").startswith("Stopped after")
    assert silent == 0, "Stop silences the answer"
    assert after["t"] - before["t"] > 0.3 and after["played"] == before["played"] < before["scheduled"]
    assert page.is_disabled("#stop") and page.is_enabled("#replay")
    (row,) = timeline_rows(page)
    assert row["stopMarks"] == 1 and row["stopped"] > 0 and row["audio"] > 50

    page.click("#replay")
    assert state(page) == "speaking" and page.is_enabled("#stop")
    time.sleep(1)
    replaying = clock(page)
    assert 500 < replaying["played"] < 2_500, "Replay starts the answer again from its beginning"
    assert replaying["scheduled"] == pytest.approx(before["scheduled"], abs=1), (
        "the whole answer, not the part heard"
    )
    assert loudest(page, HEARING_MS) > AUDIBLE
    # On past where Stop cut it: the part never heard plays too.
    past = before["played"] + 500
    wait_until(page, f"player.playedMs() > {past}", int(past) + 30_000)
    assert state(page) == "speaking" and loudest(page, HEARING_MS) > AUDIBLE
    page.click("#stop")
    assert state(page) == "stopped"
    assert not errors, errors


def test_a_new_question_silences_the_old_answer_and_clears_its_timeline(web):
    page, errors = web
    page.fill("#prompt", "Where is my order?")
    page.click("#go")
    wait_until_the_stream_is_complete(page)
    assert state(page) == "speaking"
    assert loudest(page, HEARING_MS) > AUDIBLE
    assert len(timeline_rows(page)) == 1
    page.fill("#prompt", "And when will it arrive?")
    # In one go on the page: ask again, then listen until the new answer's first audio is scheduled.
    heard = page.evaluate(
        """async (window_ms) => {
            const old = player.programme;
            document.querySelector('#go').click();
            const right_after = { state: document.body.dataset.state,
                                  rows: document.querySelectorAll('#timeline g.run').length };
            await new Promise((r) => setTimeout(r, window_ms));
            let max = 0, samples = 0;
            while (player.programme === old || player.pieces.length === 0) {
                max = Math.max(max, player.level()); samples += 1;
                await new Promise((r) => setTimeout(r, 10));
            }
            return { ...right_after, max, samples };
        }""",
        METER_WINDOW_MS,
    )
    assert heard["state"] == "thinking" and heard["rows"] == 0, "the old answer's timeline is cleared"
    assert heard["samples"] >= 5 and heard["max"] == 0, "the old answer is silent before the new one speaks"
    wait_until_the_stream_is_complete(page)
    rows = timeline_rows(page)
    assert len(rows) == 1 and rows[0]["audio"] == int(page.get_attribute("body", "data-chunks"))
    assert page.inner_text("#answer").count("Thanks for waiting") == 1
    page.click("#stop")
    assert not errors, errors


def test_an_empty_question_shows_a_plain_message_and_no_chart(web, stack):
    page, errors = web
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url) if "/invocations" in request.url else None)
    assert page.input_value("#prompt") == "" and "three short tips" in page.get_attribute(
        "#prompt", "placeholder"
    )
    assert page.is_visible("label[for=prompt]") and page.is_visible("label[for=mode]")
    assert "Up to 4,000 characters" in page.inner_text("#limit")
    terms = page.inner_text("dl.terms")
    for term in ("bidi", "batch", "first audio", "answer complete", "chunks"):
        assert term in terms
    icon = page.request.get(f"{stack.agent_url}/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert b"<svg" in icon.body()

    page.click("#go")
    assert page.inner_text("#problem-text") == "Type a question first."
    assert (
        page.is_hidden("#chart") and page.eval_on_selector("#timeline", "svg => svg.childElementCount") == 0
    )
    assert sent == [], "an empty question is not sent"

    # The agent's own refusal of an empty prompt (the page's check bypassed): plain words too.
    page.route(
        "**/invocations",
        lambda route: route.continue_(post_data=json.dumps({"prompt": " ", "mode": "bidi", "format": "pcm"})),
    )
    page.fill("#prompt", "Where is my order?")
    page.click("#go")
    page.wait_for_selector("body[data-state=failed]", timeout=60_000)
    assert page.inner_text("#problem-text") == "Type a question first."
    assert page.get_attribute("#problem", "data-detail").startswith("missing_prompt:")
    assert "'prompt'" not in page.inner_text("#problem-text")
    assert (
        page.is_hidden("#chart") and page.eval_on_selector("#timeline", "svg => svg.childElementCount") == 0
    )
    assert len(sent) == 1
    assert not errors, errors


# slow: two long answers, one per mode (26 s); the comparison itself is test_agent_stack.py's
# test_demo_cli_compares_both_modes, in the default run.
@pytest.mark.slow
@pytest.mark.timeout(420)
def test_compare_runs_both_modes_and_draws_two_timelines(web):
    """The long answer (2.5 s of writing) gives bidi's first sentence time to be spoken before the answer
    is complete on a slow machine too: the four-sentence answer is written in 1.2 s, and on a 2-core EPYC
    where the container's calibration gave a capacity of 1, bidi's first audio came at 0.65-1.8 s and
    batch's at 1.46-2.2 s (16 turns), so the order of the two was a coin toss there. The timelines are
    read once both answers have arrived: their playback (80 s) shows nothing more."""
    page, errors = web
    page.fill("#prompt", LONG_PROMPT)
    page.click("#compare")
    wait_until_the_stream_is_complete(page, timeout_ms=300_000)
    rows = timeline_rows(page)
    page.click("#stop")
    assert not errors, errors
    assert [row["mode"] for row in rows] == ["bidi", "batch"]
    bidi, batch = rows
    assert bidi["audio"] > 50 and batch["audio"] > 50
    assert bidi["text"] == batch["text"], "the paced script model gives both modes the same reply"
    # batch speaks only after the whole answer is written; bidi while it is still being written
    assert 0 < bidi["ttfa"] < batch["ttfa"]
    assert len(batch["pieces"]) == 1, "batch speaks the whole answer as one piece"
    assert len(bidi["pieces"]) > 1, "bidi speaks sentence by sentence"
    for row in rows:
        assert row["completeMarks"] == 1
        assert_lead_matches(row)
        assert float(row["firstAudioLabel"].split()[2]) == pytest.approx(row["ttfa"] / 1000, abs=0.006)
    assert batch["lead"].endswith("after the answer was complete")


# The player's clock moves in steps of the audio output's buffer (a 128-sample render quantum is 5.3 ms
# at 24 kHz; an output callback carries a few): between the page's caption update and the test's reading,
# in the same animation frame, it can have moved one step. 20 ms is a small part of any spoken word.
CLOCK_STEP_MS = 20


def caption(page) -> dict:
    """In one animation frame, right after the page's own caption update (registered before this one,
    so it runs first): the player's clock on the captioned answer's audio, the words marked, and the
    answer's words with their timings."""
    return page.evaluate(
        """() => new Promise((resolve) => requestAnimationFrame(() => {
            const played = player.playedMs() - captioned.offsetMs;
            const marked = [...document.querySelectorAll('#answer .word.now')];
            resolve({ played,
                      marked: marked.map((s) => ({ index: Number(s.dataset.index), text: s.textContent })),
                      words: captioned.run.words.map((w) => [w.text, w.start_ms, w.end_ms]) });
        }))"""
    )


def heard_at(words: list, played_ms: float) -> int:
    """The word a listener hears `played_ms` into the answer's audio, from the `words` timings alone
    (the page's `wordAt` is what is being checked): the last word to start at or before it, held through
    the pause before the next; -1 before the first word and after the last one ends."""
    started = [i for i, (_, start, _) in enumerate(words) if start <= played_ms]
    if not started or (started[-1] == len(words) - 1 and played_ms >= words[-1][2]):
        return -1
    return started[-1]


def heard_when(page, action: str) -> str:
    """Run `action` on the page and return what the agent should record of the answer it interrupts:
    the words that started before the played ms the page sends, as written, then the mark."""
    return page.evaluate(
        """(action) => { const run = captioned.run, played = Math.round(player.playedMs() - run.offsetMs);
            document.querySelector(action).click();
            const heard = run.words.filter((w) => w.start_ms < played).map((w) => w.text);
            return [...heard, '[interrupted]'].join(' '); }""",
        action,
    )


def model_requests(stack) -> list[dict]:
    url = stack.env["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"]
    return httpx.get(f"{url}/_emulator/bedrock/requests", timeout=10, trust_env=False).json()


@pytest.mark.timeout(300)
def test_captions_follow_the_voice_and_an_interrupt_is_what_the_model_hears_next(web, stack):
    """The word marked moves on with playback and is always the word whose time holds the player's
    clock; Stop mid-answer, then asking again, and asking over a speaking answer, each leave the
    interrupted answer in the next model request as the words heard (the emulated Bedrock's record)."""
    page, errors = web
    first, second, third = "Where is my order?", "Sorry, what was that?", "Never mind, thanks."
    page.fill("#prompt", first)
    page.click("#go")
    page.wait_for_selector("body[data-state=speaking]", timeout=120_000)
    samples = []
    while len(samples) < 40:  # 4 s: the first two chunks of the answer, seven words
        samples.append(caption(page))
        time.sleep(0.1)
    indices = []
    for sample in samples:
        words, played = sample["words"], sample["played"]
        heard = heard_at(words, played)
        # The page read its clock one step earlier at most: across a word boundary in that step, the
        # word before it is still right. Any other word is wrong (one word late included).
        allowed = {heard, heard_at(words, played - CLOCK_STEP_MS)}
        (index,) = {m["index"] for m in sample["marked"]} or {-1}
        assert index in allowed, (f"marked word {index} at {played:.0f} ms; heard {heard}", words)
        if index >= 0:
            assert sample["marked"] == [{"index": index, "text": words[index][0]}], "one mark, on its word"
            indices.append(index)
    assert indices == sorted(indices) and len(set(indices)) >= 4, "the mark moves on with the voice"
    assert " ".join(w[0] for w in samples[-1]["words"]).startswith("Thanks for waiting, I found your order.")

    wait_until(page, "player.playedMs() - captioned.offsetMs > 1500")
    heard = heard_when(page, "#stop")
    wait_until(page, "document.body.dataset.heard !== undefined")
    assert page.get_attribute("body", "data-heard") == heard
    assert heard in page.inner_text("#heard") and state(page) == "stopped"
    assert 3 <= len(heard.split()) < len(samples[-1]["words"]), "interrupted mid-answer"

    page.fill("#prompt", second)
    page.click("#go")
    page.wait_for_selector("body[data-state=speaking]", timeout=120_000)
    assert model_requests(stack)[-1]["messages"][-3:] == [
        {"role": "user", "content": [{"text": first}]},
        {"role": "assistant", "content": [{"text": heard}]},
        {"role": "user", "content": [{"text": second}]},
    ]

    wait_until(page, "player.playedMs() - captioned.offsetMs > 800")
    page.fill("#prompt", third)
    heard_again = heard_when(page, "#go")  # asking over the answer interrupts it
    page.wait_for_selector("body[data-state=speaking]", timeout=120_000)
    assert page.get_attribute("body", "data-heard") == heard_again
    assert model_requests(stack)[-1]["messages"][-3:] == [
        {"role": "user", "content": [{"text": second}]},
        {"role": "assistant", "content": [{"text": heard_again}]},
        {"role": "user", "content": [{"text": third}]},
    ]
    page.click("#stop")
    assert not errors, errors


def test_the_voice_picker_groups_the_endpoints_voices_by_language_and_speaks_a_blend(web):
    """The pickers hold the endpoint's 54 voices (`GET /voices`), grouped by language, af_heart chosen;
    a blend of two is sent as Kokoro writes one, and the answer is spoken in it."""
    page, errors = web
    wait_until(page, "document.querySelectorAll('#speaker option').length > 54")
    groups = dict(
        page.eval_on_selector_all("#speaker optgroup", "gs => gs.map(g => [g.label, g.children.length])")
    )
    assert groups["English (US)"] == 20 and groups["English (UK)"] == 8 and sum(groups.values()) == 54
    assert page.input_value("#speaker") == "af_heart"
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/invocations") else None)
    page.select_option("#speaker", "bm_george")
    page.select_option("#blend", "af_heart")
    page.evaluate("document.getElementById('blend-weight').value = 30")
    page.fill("#prompt", "Where is my order?")
    page.click("#go")
    wait_until_the_stream_is_complete(page)
    assert sent[-1]["voice"] == "bm_george(70)+af_heart(30)"
    assert state(page) == "speaking" and loudest(page, HEARING_MS) > AUDIBLE
    assert int(page.get_attribute("body", "data-chunks")) > 10 and not errors, errors
    page.click("#stop")
