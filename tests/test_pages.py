"""The pages view.py writes, opened in a real headless browser (Debian's chromium, driven by
Playwright with `executable_path`: no browser download).

Every shipped recording's page shows the run's facts, raises no script error and makes no
request; a hostile recording's page shows its strings as text and runs none of them; the
arrow keys step through the turns. The size bounds need no browser, nor do the limits and
fallbacks of the drawing itself (harness/page.py, each pinned at its edge), which run in
the test's process.
"""

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_loop import TOOL_START
from harness.console import made_by
from harness.outcomes import NOT_A_MODEL
from harness.page import CHUNKS_SHOWN, chunk_list, index_page, recording_page, stream_chart, text
from harness.recording import RECORDINGS, RUNS, load, save
from harness.recording_format import ENDED_WITHOUT_DONE
from tests.helpers import SHOWN, altered, lab_copy
from tests.in_process import run_cli

HERE = Path(__file__).resolve().parent.parent
SHIPPED = SHOWN  # the shipped recordings but a measurement's (tests/helpers.py)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# One worker runs this file (`--dist loadgroup`): it starts one chromium, not one each.
pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM:
        pytest.skip("no chromium here (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed (it is in requirements-test-lock.txt)")
    with sync_playwright() as playwright:
        # subtle: as root, chromium refuses to start with its own sandbox
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def view(*paths, out):
    """The pages' addresses view.py prints, its main() run here (tests/in_process.py)."""
    finished = run_cli("view.py", *paths, "--out", out)
    assert finished.returncode == 0, finished.stderr
    return finished.stdout.split()


@pytest.fixture(scope="module")
def shipped_pages(tmp_path_factory):
    """{recording's path, or "index": its page's address}, every shipped recording's."""
    urls = view(*SHIPPED, out=tmp_path_factory.mktemp("shipped"))
    return dict(zip([*SHIPPED, "index"], urls, strict=True))


class Tab:
    """One browser tab for the module's tests. A new tab is a new renderer process, which
    cost each page test about 0.3 s of CPU more than loading the page itself did.
    `open(url)` loads a page and starts its two lists again: the script errors it raises
    and its requests for anything but itself.

    A test that only reads the page it opens (no key, no click, no navigation) says so
    (`only_reads=True`); a page loaded for such a test and then read only, by tests that
    say so, is not loaded again for the next one that opens it: it is set to the width and
    colours that test asks for, and its lists are still those of its load. Loading a page
    costs the browser about 0.1 s of CPU; a test that touches its page has its own load."""

    def __init__(self, browser):
        self.page = browser.new_page()
        self.url, self.errors, self.requests = None, [], []
        self.read_only = None  # the address the tab holds as it was loaded, if only read since
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", self._console)
        self.page.on("request", self._request)

    def _console(self, message):
        if message.type == "error":
            self.errors.append(message.text)

    def _request(self, request):
        if request.url != self.url:
            self.requests.append(request.url)

    def open(self, url, width=1280, height=720, scheme="light", only_reads=False):
        """(page, script errors, requests) after loading `url` in a window `width` px wide,
        with the system's colours set to `scheme` (see the class for `only_reads`)."""
        self.page.set_viewport_size({"width": width, "height": height})
        self.page.emulate_media(color_scheme=scheme)
        if not (only_reads and self.read_only == url):
            self.url, self.errors[:], self.requests[:] = url, [], []
            self.page.goto(url)
        self.read_only = url if only_reads else None
        return self.page, self.errors, self.requests


@pytest.fixture(scope="module")
def tab(browser):
    shared = Tab(browser)
    yield shared
    shared.page.close()


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_recording_has_a_page_that_shows_its_run_and_fits_the_screen(
    tab, shipped_pages, path
):
    url = shipped_pages[path]  # one view.py run wrote them all
    assert url.endswith(f"/{path.stem}.html")
    page, errors, requests = tab.open(url, only_reads=True)
    recording = load(path)
    # subtle: the same innerText and count as `inner_text` and `query_selector_all`, in one
    # round trip each: those two cost the 39 pages about 2 s of CPU more (docs/costs.md)
    shown = page.evaluate("() => document.body.innerText")
    verdict = recording["final_tests"]["verdict"]
    assert f"Independent verdict: {verdict}" in shown
    assert recording["stop"]["reason"] in shown
    turns = page.eval_on_selector_all(".turn", "(found) => found.length")
    assert turns == len(recording["model_calls"])
    assert errors == [] and requests == []
    streams = sum(bool(call.get("arrived")) for call in recording["model_calls"])
    for width in (1280, 360):  # on a phone too: each bar's label and each mark on screen (FIT)
        page.set_viewport_size({"width": width, "height": 720})
        fit = page.evaluate(FIT)
        scroll_width, window_width = fit["page"]
        assert scroll_width <= window_width and fit["off"] == [], (width, fit)
        assert fit["requests"] == len(recording["model_calls"]) and fit["marks"] >= streams


def test_the_index_links_every_page(tab, tmp_path):
    top = [p for p in SHIPPED if p.parent == RECORDINGS][:3]  # one group: the walk-through
    urls = view(*top, out=tmp_path)
    assert urls[-1] == (tmp_path / "index.html").as_uri()
    page, errors, requests = tab.open(urls[-1])
    links = [a.get_attribute("href") for a in page.query_selector_all("a")]
    assert links == [f"./{p.stem}.html" for p in top]
    page.click("a >> nth=0")
    assert page.url == urls[0] and errors == [] and requests == [urls[0]]  # the link, only


HOSTILE = (
    '</script><script>window.pwned = 1</script><img src="x" onerror="window.pwned = 2">'
    '<a href="javascript:window.pwned = 3">click</a><iframe src="https://example.invalid/">'
)


def test_a_hostile_recording_is_shown_as_text_and_runs_nothing(tab, tmp_path):
    def change(recording):
        recording["description"] = HOSTILE
        recording["model"]["name"] = HOSTILE
        recording["final_source"] = HOSTILE
        for call in recording["model_calls"]:
            for chunk in call["chunks"]:
                message = chunk.get("message") or {}
                for key in ("content", "thinking"):
                    if message.get(key):
                        message[key] = HOSTILE
        for event in recording["events"]:
            if event["type"] == "tool_result" and "text" in event["result"]:
                event["result"]["text"] = HOSTILE
            if event["type"] == "tool_start":
                event["arguments"] = {"path": HOSTILE}
        recording["messages"][1]["content"] = HOSTILE

    path = altered(tmp_path, change, name="javascript:alert(1)<b>.json")
    (url,) = view(path, out=tmp_path / "pages")
    page, errors, requests = tab.open(url)
    page.keyboard.press("ArrowRight")
    # open every request and chunk list (each summary clicked, as its activation toggles
    # its details; in one round trip, not one a summary): still nothing runs
    opened = page.eval_on_selector_all(
        "summary", "(all) => all.map((s) => { s.click(); return s.parentElement.open; })"
    )
    assert len(opened) > 5 and all(opened)  # 11 as written
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.query_selector_all("img, iframe, a[href^='javascript']") == []
    assert HOSTILE in page.inner_text("body")  # shown, as text
    assert requests == [] and errors == []


def test_the_arrow_keys_step_through_the_turns(tab, tmp_path):
    (url,) = view(RECORDINGS / "repair.json", out=tmp_path)
    page, errors, _ = tab.open(url)

    def at():
        return page.evaluate("document.activeElement.id")

    page.keyboard.press("ArrowRight")
    assert at() == "turn-1"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert at() == "turn-3"
    page.keyboard.press("ArrowLeft")
    assert at() == "turn-2"
    for _ in range(9):
        page.keyboard.press("ArrowRight")
    assert at() == "turn-5"  # the last turn; no further
    page.click("text=request 2 whole, as the loop passed it to the adapter")
    assert page.is_visible("#turn-2 details[open] pre")
    assert errors == []


# --- without a browser ----------------------------------------------------------------------------


def test_the_repair_page_is_well_under_a_megabyte(tmp_path):
    (url,) = view(RECORDINGS / "repair.json", out=tmp_path)
    assert (tmp_path / "repair.html").stat().st_size < 200_000


def test_a_million_chunks_render_a_bounded_page():
    recording = load(RECORDINGS / "repair.json")
    piece = {"message": {"role": "assistant", "content": "x"}, "done": False}
    call = recording["model_calls"][0]
    call["chunks"] = [piece] * 1_000_000 + call["chunks"]
    call["arrived"] = [i / 1_000_000 for i in range(len(call["chunks"]))]
    html = recording_page(recording, "million.json")
    assert len(html) < 1_000_000
    assert (
        f"and 1,000,006 more, not shown (a page lists {CHUNKS_SHOWN} a turn)".replace(
            "1,000,006", f"{len(call['chunks']) - CHUNKS_SHOWN:,}"
        )
        in html
    )
    assert "; 1,000,006 chunks, one in 2,500 drawn" in html


def test_view_refuses_an_unreadable_recording_in_one_line_and_writes_the_rest(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    finished = subprocess.run(
        [sys.executable, str(HERE / "view.py"), str(bad), str(RECORDINGS / "repair.json"),
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert finished.returncode == 2
    assert finished.stderr.startswith(f"error: {bad}: not a JSON recording")
    assert len(finished.stderr.splitlines()) == 1
    assert (tmp_path / "out" / "repair.html").exists()


def test_the_held_out_row_links_where_the_lab_explains_it_from_wherever_the_page_is(tmp_path):
    # pages written into a folder outside the lab still reach its docs/, by a relative path
    row = re.compile(r'<li>held-out checks: [^<]*<a href="([^"]+)">\(what these are\)</a></li>')
    for folder in (tmp_path / "pages", tmp_path / "a" / "b"):
        view(RECORDINGS / "repair.json", out=folder)
        found = row.search((folder / "repair.html").read_text(encoding="utf-8"))
        assert found, "the held-out row has no link"
        target, _, anchor = found.group(1).partition("#")
        assert not target.startswith(("/", "file:")) and anchor == "the-verdict-in-full"
        assert (folder / target).resolve() == HERE / "docs" / "stop-and-verdict.md"


@pytest.mark.parametrize(
    "name, said",
    [
        ("repair.json", "through Ollama&#x27;s /api/chat (ollama-python 0.6.3); temperature 0, "
         "seed 7; at most 2,048 tokens a turn, 12 turns"),
        ("live/qwen2.5-coder-1.5b-1.json", "through an OpenAI-compatible server at "
         "http://127.0.0.1:48593/v1 (server version: 0.5.0-dev"),
    ],
    ids=["ollama", "openai"],
)  # fmt: skip
def test_the_made_row_says_how_the_model_was_asked_which_the_subtitle_does_not(name, said):
    recording = load(RECORDINGS / name)
    page = recording_page(recording, name)
    subtitle = re.search(r'<p class="muted">([^<]*)</p>', page).group(1)
    row = re.search(r"<tr><th>made</th><td>([^<]*)</td></tr>", page).group(1)
    assert row.startswith(said) and row != subtitle and subtitle == text(made_by(recording))
    assert f"{recording['max_turns']} turns" in row  # the run's budget, said nowhere else


def test_a_page_never_embeds_the_recording_as_data_or_markup(tmp_path):
    recording = load(RECORDINGS / "repair.json")
    recording["description"] = "</script><script>x()</script>"
    save(tmp_path / "r.json", recording)
    html = recording_page(load(tmp_path / "r.json"), "r.json")
    assert html.count("<script>") == 1 and "innerHTML" not in html
    assert "&lt;/script&gt;&lt;script&gt;x()&lt;/script&gt;" in html
    assert json.dumps(recording["description"]) not in html


def test_lab_view_writes_a_page_per_recording_the_lab_ships_and_the_learner_made(tmp_path):
    # a copy of the lab (sharing this one's .venv/), so that its runs/ holds a run of the
    # learner's, in a folder of its own, whatever this lab's runs/ holds
    lab = lab_copy(tmp_path, "recordings")
    for lock in (
        "requirements-lock.txt",
        "requirements-test-lock.txt",
        "requirements-mcp-lock.txt",
    ):
        shutil.copy(HERE / lock, lab / lock)
    (lab / ".venv").symlink_to(HERE / ".venv")
    (lab / "runs" / "tries").mkdir(parents=True)
    shutil.copy(RECORDINGS / "repair.json", lab / "runs" / "tries" / "mine.json")
    out = tmp_path / "pages"
    finished = subprocess.run(
        [sys.executable, str(lab / "lab.py"), "view", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr
    written = sorted(p.name for p in out.glob("*.html"))
    every = RECORDINGS.rglob("*.json")  # lab.py view shows a measurement's recordings too
    assert written == sorted([f"{p.stem}.html" for p in every] + ["mine.html", "index.html"])
    assert finished.stdout.split()[-1] == (out / "index.html").as_uri()
    index = (out / "index.html").read_text()
    headings = re.findall(r"<h2>([^<]*)</h2>", index)
    assert headings[:2] == ["Your runs", "The walk-through"]  # the learner's first
    assert "runs/tries/: your own recordings" in index and str(lab) not in index


def test_compare_writes_a_series_page_linking_each_attempts_page(tab, series):
    finished, target = series
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.rstrip().endswith(target.as_uri())
    page, errors, requests = tab.open(target.as_uri(), only_reads=True)
    shown = page.inner_text("body")
    assert "passed 0 of 1 (0%; 95% interval 0%-79%)" in shown  # the live SmolLM2 attempt
    links = {a.get_attribute("href") for a in page.query_selector_all("a")}
    assert links == {f"./{p.stem}.html" for p in SHIPPED}
    assert all((target.parent / f"{p.stem}.html").exists() for p in SHIPPED)
    assert len(page.query_selector_all("svg")) >= 1 and errors == [] and requests == []
    # each group of hand-written chunks says its rate says nothing of a model; no other does
    for group in target.read_text().split("<h2>")[1:]:
        hand_written = group.startswith(("scripted", "fault-injection"))
        assert (text(NOT_A_MODEL) in group) == hand_written, group[:80]


def test_compare_writes_a_series_page_when_every_attempt_of_a_group_was_interrupted(tmp_path):
    # found by the snapshots: the page drew the interval of 0 counted attempts, a traceback
    def interrupt(recording):
        recording.update(interrupted=True, final_tests=None)
        recording["stop"] = {"type": "stopped", "turn": 3, "reason": "interrupted"}
        recording["events"] = [e for e in recording["events"] if e["type"] != "stopped"]

    folder = tmp_path / "pages"
    target = folder / "series.html"
    finished = run_cli("compare.py", altered(tmp_path, interrupt), "--html", folder)
    assert finished.returncode == 0, finished.stderr
    shown = target.read_text()
    assert "passed 0 of 0 (no attempt ran to its verdict); 1 interrupted" in shown
    assert 'aria-label="success rate and its interval"' not in shown


def test_the_readmes_screenshot_is_a_small_png_of_the_repair_page():
    shot = HERE / "docs" / "repair-page.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size < 200_000
    assert "](docs/repair-page.png)" in (HERE / "README.md").read_text()


# --- red-team findings on the first version of the pages ------------------------------------------


def test_a_recording_the_page_cannot_draw_is_one_error_and_the_others_are_written(tmp_path):
    # the first page drawer raised on these and wrote nothing after (load() accepted them)
    def surrogate(recording):
        recording["description"] = "x\ud800y"  # kept as a JSON escape, on purpose

    def far_arrivals(recording):
        recording["model_calls"][0]["arrived"] = [1e308] * len(
            recording["model_calls"][0]["chunks"]
        )

    def bad_calls(recording):
        recording["events"][5]["message"]["tool_calls"] = "ab"  # a model_done's calls

    paths = [altered(tmp_path, change, f"{change.__name__}.json")
             for change in (surrogate, far_arrivals, bad_calls)]  # fmt: skip
    finished = subprocess.run(
        [sys.executable, str(HERE / "view.py"), *map(str, paths), str(RECORDINGS / "repair.json"),
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "Traceback" not in finished.stderr
    assert finished.returncode in (0, 2)
    for line in finished.stderr.splitlines():  # load() refuses bad_calls since
        assert line.startswith("error: ") and ("cannot be shown" in line or "must be" in line)
    assert (tmp_path / "out" / "repair.html").stat().st_size > 0
    assert all(p.stat().st_size > 0 for p in (tmp_path / "out").glob("*.html"))
    assert len(list((tmp_path / "out").glob("*.html"))) + len(finished.stderr.splitlines()) == 5


def test_a_long_run_gives_a_bounded_page_in_bounded_time():
    # 3,000 turns of a growing conversation once gave a 1.6 GB page in 48 s
    recording = load(RECORDINGS / "repair.json")
    message = {"role": "user", "content": "y" * 100}
    recording["messages"] = [message] * 3000
    call = {"request_length": 3000, "chunks": [], "ended": "done", "arrived": []}
    recording["model_calls"] = [call] * 3000
    recording["events"] = []
    html = recording_page(recording, "long.json")
    assert len(html) < 8_000_000
    assert "... and 2,800 more turns, not shown" in html
    assert "no more whole requests on this page" in html


def test_two_recordings_of_one_name_get_two_pages(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "index.json").write_bytes((RECORDINGS / "repair.json").read_bytes())
    urls = view(tmp_path / "a" / "index.json", tmp_path / "b" / "index.json", out=tmp_path / "o")
    assert [u.rsplit("/", 1)[1] for u in urls] == ["index-2.html", "index-3.html", "index.html"]


def test_a_turn_shows_its_stop_and_no_note_of_calls_left_out():
    html = recording_page(load(RECORDINGS / "repair.json"), "repair.json")
    assert html.count("Stop: assistant_finished") == 1  # in the turn where the loop stopped
    assert "more calls of this turn" not in html  # it made far fewer than a page shows


def test_a_stream_that_ended_without_done_says_so_on_its_turn(tmp_path):
    def cut(recording):
        recording["model_calls"][0]["ended"] = ENDED_WITHOUT_DONE

    html = recording_page(load(altered(tmp_path, cut)), "cut.json")
    assert "The turn did not complete: the stream ended without a done chunk" in html


def test_each_turn_shows_its_own_stream_and_the_request_it_answered():
    recording = load(RECORDINGS / "repair.json")
    html = recording_page(recording, "repair.json")
    counts = [f"{len(call['chunks'])} chunks, as recorded" for call in recording["model_calls"]]
    at = [html.find(text) for text in counts]
    assert -1 not in at and at == sorted(at)  # turn 1's stream first, each in its turn
    first = recording["model_calls"][0]["request_length"]
    chars = sum(len(json.dumps(m, ensure_ascii=False)) for m in recording["messages"][:first])
    assert f"{first} messages, {chars:,} characters" in html  # the growth chart's first bar


@pytest.mark.parametrize(
    "turns, note",
    [(200, ""), (201, '<p class="muted">... and 1 more turns, not shown (a page shows 200)</p>')],
    ids=["200", "201"],
)
def test_a_page_draws_200_turns_and_counts_the_rest(turns, note):
    # TURNS_SHOWN (200, written out here) bounds a page; mutations: 201, the note's
    # `turns > TURNS_SHOWN` -> `>=` ("... and 0 more") or dropped
    recording = load(RECORDINGS / "repair.json")
    call = {"request_length": 2, "chunks": [], "ended": "done", "arrived": []}
    recording["model_calls"], recording["events"] = [call] * turns, []
    html = recording_page(recording, "many.json")
    assert html.count('<section class="turn"') == 200
    assert ("more turns, not shown" in html) == bool(note) and note in html


@pytest.mark.parametrize("name", ["repair.json", "smollm2-135m-live.json"])
def test_each_streams_end_is_marked_done_on_both_wires(name):
    # Ollama's `done: true` chunk, and an OpenAI event with a finish_reason.
    recording = load(RECORDINGS / name)
    html = recording_page(recording, name)
    assert html.count('stroke="var(--done)"') == len(recording["model_calls"])


def test_only_a_done_of_true_marks_a_streams_end():
    # Ollama's `done` is a bool: a chunk whose `done` is some other truthy value ("no", 1)
    # is drawn as what it carries, not as a second end of its stream.
    recording = load(RECORDINGS / "repair.json")
    recording["model_calls"][0]["chunks"][0]["done"] = "no"
    html = recording_page(recording, "repair.json")
    assert html.count('stroke="var(--done)"') == len(recording["model_calls"])


def test_a_test_run_without_its_seconds_adds_nothing_to_the_independent_tests_time():
    # A recording from before test runs were timed: its runs count 0 s, not a guess.
    recording = load(RECORDINGS / "repair.json")
    del recording["starting_tests"]["seconds"]
    recording["final_tests"]["seconds"] = 2.5
    assert "independent tests 2.50s" in recording_page(recording, "repair.json")


# --- the page's limits and fallbacks, each pinned at its edge (mutation survivors) ----------------


def _whole_request_turns(first_length):
    """The page of a three-turn run whose first request's whole JSON (as the page cuts it,
    indent=1) is `first_length` characters long; each later request adds one short message."""
    recording = load(RECORDINGS / "repair.json")
    empty = len(json.dumps([{"role": "user", "content": ""}], ensure_ascii=False, indent=1))
    short = {"role": "user", "content": "ok"}
    recording["messages"] = [
        {"role": "user", "content": "y" * (first_length - empty)},
        short,
        short,
    ]
    recording["model_calls"] = [
        {"request_length": n, "chunks": [], "ended": "done", "arrived": []} for n in (1, 2, 3)
    ]
    recording["events"] = []
    return recording_page(recording, "budget.json")


@pytest.mark.parametrize(
    "first_length, whole_in_turns, cut_note",
    [
        (1_999_999, [1, 2], "... and 1,979,999 more characters"),  # 1 left: turn 2 gets "[\n"
        (2_000_000, [1], "... and 1,980,000 more characters"),  # the budget spent exactly
        (2_000_002, [1], "... and 1,980,001 more characters"),  # cut one past the budget
    ],
    ids=["one-left", "spent-exactly", "cut"],
)
def test_whole_requests_fill_a_budget_of_two_million_characters(
    first_length, whole_in_turns, cut_note
):
    # Each request repeats the one before, so whole requests would grow a long run's page
    # with the square of its turns: WHOLE_REQUESTS (2,000,000) bounds them. Mutants: the
    # bound 2,000,001, `budget > 0` -> `>= 0` or `> 1`, the cut `budget + 1` -> `- 1`.
    html = _whole_request_turns(first_length)
    shown = [n for n in (1, 2, 3) if f"request {n} whole, as the loop passed it" in html]
    assert shown == whole_in_turns
    assert html.count(cut_note) == 1  # turn 1's whole request, past the 20,000 a block shows
    note = (
        '<p class="muted">(no more whole requests on this page: it holds 2,000,000 '
        "characters of them at most)</p>"
    )
    assert html.count(note) == 3 - len(whole_in_turns)
    if 2 in whole_in_turns:  # the one character left, and the one past it
        assert '<pre class="">[\n</pre>' in html.split('id="turn-2"')[1]


@pytest.mark.parametrize(
    "length, cut", [(20_000, ""), (20_001, "\n... and 1 more characters")], ids=["whole", "cut"]
)
def test_a_block_of_20000_characters_is_shown_whole_and_a_longer_one_cut(length, cut):
    # TEXT_SHOWN bounds every block of text; mutation: `len(value) > TEXT_SHOWN` -> `>=`
    # cut a block of exactly 20,000 characters and said "0 more characters"
    recording = load(RECORDINGS / "repair.json")
    recording["description"] = "d" * length
    html = recording_page(recording, "repair.json")
    about = "<summary>About this recording (read it last)</summary>"
    assert f'{about}<pre class="prose">{"d" * 20_000}{cut}</pre></details>' in html


def test_values_that_are_not_text_are_shown_as_json_with_their_own_characters():
    # load() takes a tool event's name and a result's error of any JSON type: the page shows
    # them as JSON, and "é" as itself, not "\u00e9". Mutations: `ensure_ascii=False` -> True
    # in text() (the call's heading) and in pre() (the error's block).
    recording = load(RECORDINGS / "repair.json")
    start = next(e for e in recording["events"] if e["type"] == "tool_start")
    result = next(e for e in recording["events"] if e["type"] == "tool_result")
    start["name"] = result["name"] = ["lire", "é"]
    result["result"] = {"error": {"raison": "déjà lu"}}
    html = recording_page(recording, "repair.json")
    assert "<h3>Call 1: [&quot;lire&quot;, &quot;é&quot;]</h3>" in html
    error = '<p class="failed">Error returned to the model:</p><pre class="prose">'
    assert f"{error}{{&quot;raison&quot;: &quot;déjà lu&quot;}}</pre>" in html


def test_a_run_stopped_before_its_first_model_call_has_a_page_with_no_bars():
    # Ctrl-C before the model answered leaves no model call, and load() accepts that: the
    # growth chart is then empty, not an error. Mutations: `if not sizes` dropped or its
    # body made `pass` (max() of nothing), `return ""` -> None (a page of "None").
    recording = load(RECORDINGS / "repair.json")
    recording.update(interrupted=True, final_tests=None, model_calls=[], events=[])
    recording["stop"] = {"type": "stopped", "turn": 1, "reason": "interrupted"}
    html = recording_page(recording, "early.json")
    grew = '<h2>How the conversation grew</h2>\n\n<pre class="stop prose">Stop: interrupted</pre>'
    assert grew in html and "<svg" not in html


def test_a_request_of_no_characters_still_gets_a_bar_of_half_a_percent():
    # A bar is at least 0.5% of the row long, so a request of nothing is still drawn beside
    # the others; mutation: `max(0.5, ...)` -> 0.6.
    recording = load(RECORDINGS / "repair.json")
    recording["model_calls"][0]["request_length"] = 0
    html = recording_page(recording, "repair.json")
    assert (
        '<span>request 1</span><span><span class="bar" style="width:0.5%"></span> '
        '<span class="size">0 messages, 0 characters</span></span>'
    ) in html


def marks(chart):
    """The colour of each chunk mark a stream chart draws, in order."""
    mark = r'<line x1="[\d.]+%" x2="[\d.]+%" y1="8" y2="34" stroke="var\(--(\w+)\)">'
    return re.findall(mark, chart)


@pytest.mark.parametrize(
    "count, drawn, note",
    [(799, 799, "the last after 0.798 s; drawn in the order they arrived"),
     (800, 400, "the last after 0.799 s; 800 chunks, one in 2 drawn; drawn in the order")],
    ids=["799", "800"],
)  # fmt: skip
def test_a_stream_of_800_chunks_draws_every_other_one_and_says_so(count, drawn, note):
    # POINTS_DRAWN (400) marks at most a turn: from twice that, every step-th chunk is
    # drawn. Mutations: 400 -> 401 drew all 800; the note's `step > 1` -> `> 2` hid it.
    chart = stream_chart({"arrived": [n / 1000 for n in range(count)], "chunks": []})
    assert len(marks(chart)) == drawn and note in chart


def test_a_stream_whose_marks_would_fall_on_one_another_is_drawn_in_order_and_says_so():
    # a stand-in sends a turn's chunks within a millisecond or two: on the time scale they
    # bunched at the right edge; marks closer than MARK_GAP (0.5% of the width) on it are
    # drawn evenly spaced. The axis runs from 1.5% to 98.5% of the chart's width.
    bunched = stream_chart({"arrived": [0.0, 0.9990, 0.9995, 1.0], "chunks": []})
    marked = ["1.50%", "33.83%", "66.17%", "98.50%"]
    assert re.findall(r'<line x1="([\d.]+%)"', bunched)[1:] == marked
    assert "drawn in the order they arrived, evenly spaced" in bunched
    assert '<text x="1.5%" y="50">first</text>' in bunched
    apart = stream_chart({"arrived": [0.0, 0.3, 0.6, 1.0], "chunks": []}, scripted=True)
    marked = ["1.50%", "30.60%", "59.70%", "98.50%"]
    assert re.findall(r'<line x1="([\d.]+%)"', apart)[1:] == marked
    assert "in the order" not in apart and '<text x="1.5%" y="50">0 s</text>' in apart
    assert "scripted: a stand-in server sent chunks written by hand" in apart


def test_arrival_times_past_the_last_chunk_are_drawn_as_text():
    # load() does not match a call's arrival times to its chunks: a time with no chunk is
    # drawn as a text mark, not an IndexError; mutation: `index < len(items)` -> `<=`.
    chunk = {"message": {"role": "assistant", "content": "a"}, "done": True}
    chart = stream_chart({"arrived": [0.0, 0.5, 1.0], "chunks": [chunk]})
    assert marks(chart) == ["done", "text", "text"]


@pytest.mark.parametrize(
    "count, end",
    [(200, '{"n": 199}</pre></details>'),
     (201, '{"n": 199}\n... and 1 more, not shown (a page lists 200 a turn)</pre></details>')],
    ids=["200", "201"],
)  # fmt: skip
def test_a_turn_lists_200_chunks_and_counts_the_rest(count, end):
    # CHUNKS_SHOWN bounds a turn's list; mutation: `more > 0` -> `> 1` left the 201st unsaid
    listed = chunk_list({"chunks": [{"n": n} for n in range(count)]})
    assert listed.startswith(f"<details><summary>its {count} chunks, as recorded</summary>")
    assert listed.endswith(end.replace('"', "&quot;"))


def test_the_index_shows_a_run_of_0_0_seconds_and_leaves_an_unmeasured_one_blank():
    # A recording keeps loop_seconds only when the loop was timed: 0.0 is a time, a missing
    # one is not. Mutation: `seconds is None` read as truthiness left 0.0 s blank.
    timed, untimed = load(RECORDINGS / "repair.json"), load(RECORDINGS / "repair.json")
    timed["loop_seconds"] = 0.0
    del untimed["loop_seconds"]
    html = index_page([("fast.json", "fast.html", timed), ("old.json", "old.html", untimed)])
    assert re.findall(r"<td>5</td><td>([^<]*)</td></tr>", html) == ["0.0", ""]  # 5 turns


@pytest.mark.parametrize("argument, value", [("old", 3), ("new", 3), ("old", "parts")])
def test_the_page_of_an_edit_it_cannot_redo_shows_no_diff(tmp_path, argument, value):
    # mutation: the `isinstance(old, str) and isinstance(new, str)` check weakened to one
    # side tried the edit with 3: a TypeError, and the page could not be drawn at all;
    # without `source.count(old) != 1`, an `old` found 4 times drew a diff of the first
    from harness.page import recording_page

    def change(recording):
        start = next(e for e in recording["events"] if e.get("name") == "replace_text")
        start["arguments"][argument] = value

    page = recording_page(load(altered(tmp_path, change)), "odd")
    assert "The diff of this edit:" not in page and "What the run changed" in page
    assert "The diff of this edit:" in recording_page(load(RECORDINGS / "repair.json"), "r")


@pytest.mark.parametrize("arguments", [["old", "new"], "old -> new"])
def test_the_page_of_an_edit_whose_arguments_are_not_an_object_shows_no_diff(tmp_path, arguments):
    # load() keeps a tool_start's arguments whatever their type: the page cannot redo an
    # edit from a list or a text, so it draws the call without its diff, not no page at all
    from harness.page import recording_page

    def change(recording):
        start = next(e for e in recording["events"] if e.get("name") == "replace_text")
        start["arguments"] = arguments

    page = recording_page(load(altered(tmp_path, change)), "odd")
    assert "The diff of this edit:" not in page and "What the run changed" in page


def test_the_page_of_requests_said_to_hold_no_message_is_drawn(tmp_path):
    # mutation: `max(...) or 1` without its fallback divided by zero: load() accepts a
    # request_length of 0, and then every bar of the growth chart is 0 characters long
    from harness.page import recording_page

    def change(recording):
        for saved in recording["model_calls"]:
            saved["request_length"] = 0

    page = recording_page(load(altered(tmp_path, change)), "empty requests")
    assert "<svg" in page and "Independent verdict" in page


def test_a_request_that_adds_no_message_says_so_on_its_page(tmp_path):
    # mutation: `new_text or "(nothing new)"` without its fallback drew an empty block
    from harness.page import recording_page

    def change(recording):
        calls = recording["model_calls"]
        calls[1]["request_length"] = calls[0]["request_length"]

    page = recording_page(load(altered(tmp_path, change)), "no new message")
    assert 'Request 2: 2 messages, 0 new</h3>\n<pre class="">(nothing new)</pre>' in page


def test_a_page_draws_chunks_that_are_not_objects_as_text(tmp_path):
    # mutations: _kind's guards for an item or a message that is not an object dropped (an
    # AttributeError: no page at all), or its "text" made None (a mark coloured var(--None));
    # load() keeps such chunks, as a malformed stream's recording holds them
    from harness.page import recording_page

    def change(recording):
        call = recording["model_calls"][0]
        call["chunks"][0] = {"message": "hi"}
        call["chunks"].insert(1, "junk")
        call["arrived"].insert(1, call["arrived"][0])

    page = recording_page(load(altered(tmp_path, change)), "odd chunks")
    marks = re.findall(r'y1="8" y2="34" stroke="var\(--(\w+)\)"', page)
    assert marks[:2] == ["text", "text"] and "var(--None)" not in page


def test_a_stream_whose_chunks_all_arrived_at_once_is_drawn_in_their_order():
    # mutations: `max(arrived) or 0.001` without its fallback divided by zero; on the time
    # scale both marks fell at the start, one on the other
    from harness.page import stream_chart
    from tests.ollama_test_server import chunk

    chart = stream_chart({"arrived": [0.0, 0.0], "chunks": [chunk("a"), chunk(done=True)]})
    assert "first chunk after 0.000 s, the last after 0.000 s" in chart  # what happened
    assert chart.count('x1="1.50%" x2="1.50%"') == 1 and chart.count('x1="98.50%" x2="98.50%"') == 1


def test_a_result_of_up_to_1200_characters_is_shown_open_a_longer_one_folded():
    # mutations: `len(shown) <= FOLD_AFTER` -> `<`, and FOLD_AFTER 1200 -> 1201 (the figure
    # docs/recordings.md gives)
    from harness.page import result_block
    from harness.transcript import message_lines

    def shown(n):
        content = json.dumps({"path": "path_rules.py", "text": "x" * n})
        return len("\n".join(message_lines({"role": "tool", "content": content})[1:]))

    n = next(n for n in range(2000) if shown(n) == 1200)
    assert shown(n + 1) == 1201
    opened = result_block({"result": {"path": "path_rules.py", "text": "x" * n}})
    folded = result_block({"result": {"path": "path_rules.py", "text": "x" * (n + 1)}})
    assert opened.startswith("<p>Result:</p>") and folded.startswith("<details>")


@pytest.mark.parametrize(
    "calls, note",
    [(100, ""), (101, "... and 1 more calls of this turn, not shown (a page shows 100 a turn)")],
    ids=["100", "101"],
)
def test_a_page_draws_100_calls_of_a_turn_and_counts_the_rest(tmp_path, calls, note):
    # mutations: the cap's guard dropped, or its closing line made `pass`, drew all 101 or
    # left the 101st unsaid; the note's `shown > CALLS_SHOWN` -> `>=` said "... and 0 more"
    # of exactly 100; the loop caps a turn at 32 calls, a hand-made file need not
    from harness.page import recording_page

    def change(recording):
        events = recording["events"]
        at = next(i for i, e in enumerate(events) if e["type"] == TOOL_START)
        start, result = events[at], events[at + 1]
        more = [dict(e, index=n) for n in range(1, calls) for e in (start, result)]
        events[at + 2 : at + 2] = more

    page = recording_page(load(altered(tmp_path, change)), f"{calls} calls")
    turn_1 = page.split('id="turn-1"')[1].split('id="turn-2"')[0]
    assert turn_1.count("<h3>Call ") == 100 and "<h3>Call 101:" not in turn_1
    assert ("more calls of this turn" in turn_1) == bool(note) and note in turn_1


def test_the_stop_of_a_turn_cut_off_in_no_measurable_time_says_0_00_s():
    # mutation: `stop.get("seconds") is not None` read as truthiness dropped the line
    from harness.page import stop_block

    block = stop_block({"type": "stopped", "turn": 1, "reason": "deadline", "seconds": 0.0})
    assert "the turn it cut off took 0.00 s" in block
    assert "took" not in stop_block({"type": "stopped", "turn": 1, "reason": "deadline"})


def test_a_series_page_shows_a_count_of_0_as_0_and_only_a_missing_one_as_n_a():
    # mutation: `"n/a" if v is None` read as truthiness showed 0 model calls and 0 tokens
    # (an attempt cut off before its first answer) as "n/a"
    from harness.outcomes import Outcome
    from harness.page import series_page

    cut = Outcome(False, True, "interrupted", 0, 0, 0, None, 1.5)
    page = series_page([("live · max_turns 12", [("a-1.html", cut)])])
    cells = re.findall(r"<td>([^<]*)</td>", page.split("a-1</a>")[1])
    assert cells == ["interrupted", "0", "1.5", "0", "n/a"]


# --- what a page shows, on a narrow screen and a wide one ---------------------------------------
# For each page at 360 and 1280 px: how many lines each code block (not prose: it wraps,
# below) draws against how many it holds (a wrap draws more), the page's own width against
# the window's, and how tall each chart's label is drawn (a chart shrunk to a narrow screen
# shrank its 11 px labels).
LAYOUT = """() => {
  const pads = (e) => parseFloat(getComputedStyle(e).paddingTop) +
    parseFloat(getComputedStyle(e).paddingBottom);
  const blocks = Array.from(document.querySelectorAll("pre:not(.prose):not(.summary)"))
    .filter((e) => e.offsetParent);
  return {
    page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
    wrapped: blocks.filter((e) => Math.round((e.scrollHeight - pads(e)) /
      parseFloat(getComputedStyle(e).lineHeight)) > e.textContent.split("\\n").length).length,
    blocks: blocks.length,
    labels: Array.from(document.querySelectorAll("svg text, .grew span"),
      (e) => e.getBoundingClientRect().height),
    rows: Array.from(document.querySelectorAll(".wide tr"),
      (r) => r.getBoundingClientRect().height),
  };
}"""
NARROW_AND_WIDE = pytest.mark.parametrize("width", [360, 1280])


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Pages of three recordings and their index: the successful repair, the live turn cut
    off mid-stream, a cheat (a long diff)."""
    chosen = [RECORDINGS / name for name in
              ("repair.json", "smollm2-135m-live.json", "cheats/lookup-table.json")]  # fmt: skip
    urls = view(*chosen, out=tmp_path_factory.mktemp("pages"))
    return dict(zip(["repair", "live", "cheat", "index"], urls, strict=True))


@NARROW_AND_WIDE
@pytest.mark.parametrize("name", ["repair", "live", "cheat", "index"])  # both widths: one load
def test_no_code_line_wraps_and_only_code_scrolls_sideways(tab, pages, name, width):
    page, _, _ = tab.open(pages[name], width=width, height=800, only_reads=True)
    layout = page.evaluate(LAYOUT)
    scroll_width, window_width = layout["page"]
    assert scroll_width <= window_width  # the page itself never scrolls sideways
    assert layout["wrapped"] == 0 and (layout["blocks"] > 3 or name == "index")
    assert all(height >= 11 for height in layout["labels"]), layout["labels"]  # 11 px or more
    if width > 600:  # a row is one line; on a narrow screen it wraps (the tests below)
        assert all(height < 40 for height in layout["rows"]), layout["rows"]


# --- on a phone, sentences wrap and only code scrolls, inside its own box -------------------------
# What the learner reads as sentences (the error the model got, the reason they denied a
# call, a decision, the model's words, the stop, the verdict) wraps at 360 px; only code,
# data and diffs keep their lines, each scrolling inside its own box, never the page.
LONG_REASON = (
    "Read the test file first and tell me what it expects of a path written with backslashes; "
    "running the tests again now would only print the same failure as before, word for word."
)
BROKEN = {"old": "def python_sources(", "new": "def python_sources(( # a long comment, unclosed"}
BOXES = """() => {
  const shown = Array.from(document.querySelectorAll("pre")).filter((e) => e.offsetParent);
  const box = (e) => ({ text: e.textContent, scrolls: e.scrollWidth > e.clientWidth,
    overflow: getComputedStyle(e).overflowX, diff: e.classList.contains("diff") });
  return {
    page: [document.documentElement.scrollWidth, innerWidth],
    prose: shown.filter((e) => e.classList.contains("prose")).map(box),
    code: shown.filter((e) => !e.classList.contains("prose")).map(box),
  };
}"""


@pytest.fixture(scope="module")
def denied_page(tmp_path_factory):
    """The page of one run with a long error and a denial, record_run.py answered at a real
    pseudo-terminal: an edit the syntax hook undoes (its error to the model is long), the
    repair (allowed), then run_tests, denied with a long reason. Hand-written turns from the
    Ollama stand-in: not a model's output."""
    from tests.helpers import FIX
    from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

    def turn(*calls):
        return reply(chunk(tool_calls=list(calls)), chunk(done=True))

    folder = tmp_path_factory.mktemp("denied")
    script = [turn(call("replace_text", **BROKEN)), turn(call("replace_text", **FIX)),
              turn(call("run_tests")), reply(chunk("I will read the tests first."),
                                             chunk(done=True))]  # fmt: skip
    leader, follower = pty.openpty()
    os.write(leader, f"y\ny\nn\n{LONG_REASON}\n".encode())  # one line a read, as typed
    with OllamaTestServer(script) as server:
        done = subprocess.run(
            [sys.executable, "record_run.py", "--host", server.host, "--approve", "--hook",
             "syntax", "--output", folder / "denied.json"],
            cwd=HERE, stdin=follower, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    os.close(follower)
    os.close(leader)
    assert "[approve] denied: " + LONG_REASON in done.stdout, done.stdout + done.stderr
    (url,) = view(folder / "denied.json", out=folder / "pages")
    return url


def test_at_360_px_prose_wraps_and_only_code_and_diffs_scroll_in_their_own_box(tab, denied_page):
    page, errors, _ = tab.open(denied_page, width=360, height=800, only_reads=True)
    found = page.evaluate(BOXES)
    scroll_width, window_width = found["page"]
    assert window_width == 360 and scroll_width <= 360 and errors == []  # no sideways page
    prose = {box["text"]: box for box in found["prose"]}
    undone = next(text for text in prose if text.startswith("Your edit was undone: "))
    assert len(undone) > 200  # the long error the model got, and the denial, in prose
    assert f"The user denied this call: {LONG_REASON}" in prose
    assert any(f"[approve] denied: {LONG_REASON}" in text for text in prose)
    assert not any(box["scrolls"] for box in found["prose"]), [
        box["text"][:80] for box in found["prose"] if box["scrolls"]
    ]
    # code and diffs keep their lines: the long ones scroll inside their own box
    assert all(box["overflow"] == "auto" for box in found["code"])
    assert any(box["scrolls"] and box["diff"] for box in found["code"])
    assert any(box["scrolls"] and not box["diff"] for box in found["code"])


def test_a_cut_off_turn_shows_what_it_streamed_labelled_as_cut_off(tab, pages):
    page, errors, _ = tab.open(pages["live"], only_reads=True)
    turn = page.inner_text("#turn-1")
    assert "The turn as it arrived, cut off" in turn and "Never complete" in turn
    assert "assistant:\n    The tests of this repository fail." in turn  # what SmolLM2 said
    assert "Stop: incomplete_model_turn" in turn and errors == []


def test_each_tool_result_is_shown_once_under_its_call(tab, pages):
    page, _, _ = tab.open(pages["repair"], only_reads=True)
    shown = page.inner_text("body")
    assert shown.count("def test_keeps_only_python_files_under_src") == 1  # turn 2's result
    assert "tool result of read_file: shown under turn 2, with its call" in shown


def test_a_page_follows_the_systems_light_or_dark_setting(tab, pages):
    colours = []
    for scheme in ("light", "dark"):
        page, _, _ = tab.open(pages["repair"], scheme=scheme, only_reads=True)
        colours.append(page.evaluate("getComputedStyle(document.body).backgroundColor"))
    assert colours == ["rgb(255, 255, 255)", "rgb(22, 23, 26)"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_diff_lines_are_coloured_added_removed_and_context(tab, pages, scheme):
    page, _, _ = tab.open(pages["repair"], scheme=scheme, only_reads=True)
    colour = "(s) => Array.from(document.querySelectorAll(s), e => getComputedStyle(e).color)"
    added, removed, context = (page.evaluate(colour, f".diff-{k}") for k in ("add", "del", "ctx"))
    assert len(added) >= 2 and len(removed) >= 2 and len(context) >= 6  # two diffs
    assert len({added[0], removed[0], context[0]}) == 3


# --- on a phone: every page fits 360 px, every run's verdict in view ---------------------------
# Each check below failed on the pages of before (issue 44): the conversation's bars and
# their sizes, the stream's marks and the series' rate bars were drawn at a fixed width and
# ran off a 360 px screen, the index's verdict and outcome columns sat off it, the series'
# summary scrolled, and the keyboard hint showed on a phone. Every shipped recording's
# page is checked with FIT by the test at the top of this file that shows its run.

FIT = """() => {
  const off = (e) => { const box = e.getBoundingClientRect();
    return box.left < 0 || box.right > innerWidth; };
  const drawn = Array.from(document.querySelectorAll("svg line, svg rect, svg text, .grew span"));
  return {
    page: [document.scrollingElement.scrollWidth, innerWidth],
    off: drawn.filter(off).map((e) => e.outerHTML.slice(0, 120)),
    requests: drawn.filter((e) => /^request [0-9]+$/.test(e.textContent)).length,
    marks: document.querySelectorAll("svg line[y1='8']").length,
  };
}"""
# For each row of a table of runs: the box of its cells `columns` (0 is the first) that
# say something, as [left, right, width].
CELLS = """(columns) => Array.from(document.querySelectorAll("tr"), (row) => row.cells)
  .filter((cells) => cells[0].tagName === "TD")
  .map((cells) => columns.filter((n) => cells[n].textContent).map((n) => {
    const box = cells[n].getBoundingClientRect(); return [box.left, box.right, box.width]; }))"""


def on_screen(boxes, width):
    return all(0 <= left and right <= width and size > 0 for left, right, size in boxes)


@NARROW_AND_WIDE
def test_the_index_shows_every_runs_verdict_and_outcome_on_screen(tab, shipped_pages, width):
    page, _, _ = tab.open(shipped_pages["index"], width=width, height=800, only_reads=True)
    scroll_width, window_width = page.evaluate(FIT)["page"]
    assert scroll_width <= window_width
    rows = page.evaluate(CELLS, [3, 4])  # the verdict, and the outcome where there is one
    assert len(rows) == len(SHIPPED)
    groups = page.eval_on_selector_all("h2", "(found) => found.map((h) => h.textContent)")
    assert groups == ["The walk-through", "Cheats", "Impossible tasks", "Live attempts",
                      "Around the loop"]  # fmt: skip
    assert sum(len(boxes) == 2 for boxes in rows) == len(list(RECORDINGS.glob("impossible/*")))
    assert all(on_screen(boxes, width) for boxes in rows), rows


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """(compare.py's run, the series page it wrote) for every shipped recording."""
    target = tmp_path_factory.mktemp("series") / "series" / "series.html"
    return run_cli("compare.py", *SHIPPED, "--html", target.parent), target


@NARROW_AND_WIDE
def test_the_series_page_fits_the_screen_with_each_rate_bar_summary_and_verdict(tab, series, width):
    page, errors, _ = tab.open(series[1].as_uri(), width=width, height=800, only_reads=True)
    fit = page.evaluate(FIT)
    scroll_width, window_width = fit["page"]
    assert scroll_width <= window_width and fit["off"] == [] and errors == []
    assert len(page.query_selector_all("svg")) >= 4  # a rate bar a group
    hidden = (
        "() => Array.from(document.querySelectorAll('pre'), (e) => e.scrollWidth - e.clientWidth)"
    )
    assert set(page.evaluate(hidden)) == {0}  # no summary scrolls: each is there to read whole
    rows = page.evaluate(CELLS, [1])  # each attempt's verdict or outcome
    assert len(rows) == len(SHIPPED) and all(on_screen(boxes, width) for boxes in rows), rows


@pytest.fixture(scope="module")
def touch_tab(browser):
    """A tab of a phone: its pointer is a finger (coarse), not a mouse (fine)."""
    context = browser.new_context(has_touch=True)
    shared = Tab(context)
    yield shared
    context.close()


@NARROW_AND_WIDE
@pytest.mark.parametrize("pointer", ["coarse", "fine"])
def test_the_keyboard_hint_shows_only_with_a_fine_pointer(tab, touch_tab, pages, pointer, width):
    in_tab = touch_tab if pointer == "coarse" else tab
    page, errors, _ = in_tab.open(pages["repair"], width=width, only_reads=True)
    assert page.evaluate(f"matchMedia('(pointer: {pointer})').matches")
    assert page.is_visible("text=Keys:") == (pointer == "fine") and errors == []


def test_the_index_groups_recordings_by_folder_each_saying_what_it_holds(tmp_path):
    # the learner's own runs first, then the lab's groups in their order (a measured arm
    # after the others), whatever order the recordings come in, then any other folder under
    # its path; the lab's headed as the lab's, with paths relative to it
    mine = tmp_path / "mine" / "repair-again.json"
    mine.parent.mkdir()
    shutil.copy(RECORDINGS / "repair.json", mine)
    own = RUNS / "repair-mine.json"  # named, not written: the index reads its path alone
    arm = sorted((RECORDINGS / "extensions" / "one-shot").glob("*.json"))[0]
    paths = [RECORDINGS / "live" / "qwen2.5-coder-0.5b.json", mine, arm,
             RECORDINGS / "impossible" / "flags-the-conflict.json",
             RECORDINGS / "cheats" / "lookup-table.json", RECORDINGS / "repair.json",
             own]  # fmt: skip
    read = {path: load(RECORDINGS / "repair.json" if path == own else path) for path in paths}
    html = index_page([(path, f"{path.stem}.html", read[path]) for path in paths])
    groups = html.split("<h2>")[1:]
    headings = [group.split("</h2>")[0] for group in groups]
    assert headings == ["Your runs", "The walk-through", "Cheats", "Impossible tasks",
                        "Live attempts", "Extensions, measured: one-shot",
                        text(f"{mine.parent.as_posix()}/")]  # fmt: skip
    order = [own, paths[5], paths[4], paths[3], paths[0], arm, mine]
    for group, path in zip(groups, order, strict=True):
        assert re.findall(r'href="\./([^"]+)\.html"', group) == [path.stem]
        line = group.split("</h2>")[1].split("</p>")[0]
        assert line.startswith('<p class="muted">') and len(line) > 40, line
    assert "python3 lab.py replay, given no recording, replays these" in groups[1]
    assert '<p class="muted">runs/: your own recordings' in groups[0]
    lab = str(RECORDINGS.parent)
    assert '<p class="muted">recordings/extensions/one-shot/: real attempts' in groups[5]
    assert "not one of the lab's own" not in html and lab not in html


# --- the board (compare.py --board, harness/board.py) --------------------------------------------

BOARD = """() => {
  const box = document.querySelector(".board");
  const first = () => document.querySelector(".board tr:nth-child(2) > :first-child");
  const before = first().getBoundingClientRect().left - box.getBoundingClientRect().left;
  box.scrollLeft = box.scrollWidth;
  const after = first().getBoundingClientRect().left - box.getBoundingClientRect().left;
  return { page: [document.documentElement.scrollWidth, innerWidth], scrolled: box.scrollLeft,
    before, after, cells: document.querySelectorAll(".board td").length };
}"""


@pytest.fixture(scope="module")
def board_url(tmp_path_factory):
    """The board of the shipped measurement of the ladder and the impossible recordings, as
    compare.py --board writes it."""
    paths = sorted((RECORDINGS / "tasks").rglob("*.json")) + sorted(
        (RECORDINGS / "impossible").glob("*.json")
    )
    out = tmp_path_factory.mktemp("board")
    finished = run_cli("compare.py", "--board", *paths, "--html", out)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.splitlines()[-1] == f"The board's page: {(out / 'board.html').as_uri()}"
    return (out / "board.html").as_uri()


@NARROW_AND_WIDE
def test_the_board_scrolls_in_its_own_box_with_the_model_column_kept_in_view(tab, board_url, width):
    page, errors, requests = tab.open(board_url, width=width, height=800)  # it scrolls the box
    layout = page.evaluate(BOARD)
    assert layout["page"][0] <= layout["page"][1]  # the page never scrolls sideways
    assert layout["scrolled"] > 0  # the table is wider than the screen: its box scrolls
    assert abs(layout["before"]) < 1 and abs(layout["after"]) < 1  # the model column stays
    assert layout["cells"] > 10 and errors == [] and requests == []
