"""The README's "Start here" path and the pages in docs/, run as a learner runs them.

Each quoted block is read from README.md or docs/ itself, so the pages and these tests
cannot drift apart: a line a page quotes must appear in the output, in the same order
(lines of `...` stand for what the page leaves out; a line ending in `...` is compared up
to there). Also the README's size, its links and the core path's line numbers.

Step 1's `python3 lab.py replay` runs exactly as a learner types it, lab.py and all, and
the gamed verdict is read from that run (a recording's part of it is what replaying it
alone prints). The other commands run with the page's own arguments through the script's
main() in this process (tests/in_process.py): the same text, without an interpreter, the
SDK's import and the lab's compile each. The heredocs run as a learner's `python3` would.
"""

import json
import re
import subprocess
import sys

import pytest

from harness.recording import RECORDINGS, load
from plumbing.verdict_words import HELD_OUT_DOCS
from tests.helpers import LAB
from tests.in_process import run_cli

README = (LAB / "README.md").read_text(encoding="utf-8")
DOCS = sorted((LAB / "docs").glob("*.md"))
PAGES = "\n\n".join([README, *(page.read_text(encoding="utf-8") for page in DOCS)])


def quoted_block(first):
    """The indented block of README.md or a docs/ page whose first line starts with
    `first`, unindented."""
    lines = PAGES.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("    " + first))
    block = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    while block and not block[-1]:
        block.pop()
    return block


def appear_in_order(quoted, output):
    """The quoted lines not found in `output` in their order (empty: all of them are).

    subtle: a block that quotes nothing but a command and `...` would pass vacuously, so
    the count of lines compared must be at least 3."""
    lines, at, missing, compared = output.splitlines(), 0, [], 0
    for line in quoted:
        if line.strip() == "..." or line.startswith(("$ ", "python3 ")) or not line:
            continue  # left out, or the command that printed the rest
        compared += 1
        want = line.removesuffix("...")
        same = str.startswith if line.endswith("...") else str.__eq__
        found = next((i for i in range(at, len(lines)) if same(lines[i], want)), None)
        if found is None:
            missing.append(line)
        else:
            at = found + 1
    assert compared >= 3, f"the README quotes too little here to compare: {quoted}"
    return missing


# subtle: a module fixture is made once per xdist worker, so the tests that read the one
# run of `python3 lab.py replay` are kept on one worker (`--dist loadgroup`, lab.py test).
SHARES_THE_LEARNERS_REPLAY = pytest.mark.xdist_group("readme-lab-replay")


@pytest.fixture(scope="module")
def learners_replay():
    """`python3 lab.py replay` run as step 1 tells a learner to: every shipped recording."""
    return subprocess.run(
        [sys.executable, str(LAB / "lab.py"), "replay"], capture_output=True, text=True, cwd=LAB
    )


def replayed_alone(output, name):
    """What `output`, of a replay of every recording, printed for recordings/`name`: the
    text `python3 lab.py replay recordings/NAME` prints before its summary line."""
    lines = output.splitlines(keepends=True)
    start = next(
        i for i, line in enumerate(lines) if line.startswith(f"Recording: recordings/{name} ")
    )
    ends = (
        i for i in range(start + 1, len(lines)) if lines[i].startswith(("Recording: ", "Replayed "))
    )
    return "".join(lines[start : next(ends)])


@SHARES_THE_LEARNERS_REPLAY
def test_step_1_the_replay_of_every_recording_ends_as_quoted(learners_replay):
    quoted = quoted_block("Replayed ")
    assert learners_replay.stdout.splitlines()[-1] == quoted[0]
    assert learners_replay.returncode == 0


@SHARES_THE_LEARNERS_REPLAY
def test_step_1_explains_the_held_out_words_once_under_the_first_verdict(learners_replay):
    # the first lines a newcomer reads say "held-out checks": one note under the first
    # verdict says what they are, and where the lab says it in full; then never again
    lines = learners_replay.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("  held-out checks: "))
    notes = [i for i, line in enumerate(lines) if line.startswith("  (held-out: ")]
    assert notes == [first + 1]
    assert lines[first - 2].startswith("Starting verdict (recorded): ")
    page, _, anchor = HELD_OUT_DOCS.partition("#")
    assert lines[notes[0]].endswith(f"see {HELD_OUT_DOCS})")
    headings = re.findall(r"^#+ (.+)$", (LAB / page).read_text(encoding="utf-8"), re.M)
    assert anchor in [slug(heading) for heading in headings]


LAB_REPLAY = "python3 lab.py replay "


def replayed_as_typed(command, moved=None):
    """(exit code, stdout) of a page's `python3 lab.py replay ARGS`, printed by replay.py's
    main() called here: lab.py hands ARGS on to replay.py, and from the lab's folder its
    paths mean what they say. `moved`: {a path the page names: where it is here}."""
    assert command in PAGES and command.startswith(LAB_REPLAY)  # what the page says to type
    args = [(moved or {}).get(arg, arg) for arg in command.removeprefix(LAB_REPLAY).split()]
    finished = run_cli("replay.py", *args)
    return finished.returncode, finished.stdout


def test_step_2_the_transcript_begins_as_quoted():
    _, output = replayed_as_typed("python3 lab.py replay recordings/repair.json --transcript")
    assert (
        appear_in_order(quoted_block("Recording: recordings/repair.json  |  scripted"), output)
        == []
    )
    # "four carry pieces of thinking, the fifth the tool call, the sixth done: true"
    _, output = replayed_as_typed("python3 lab.py replay recordings/repair.json --chunks 1")
    lines = output.splitlines()
    head = lines.index("--- turn 1: its 6 chunks, as the adapter handed them over ---")
    chunks = [json.loads(line) for line in lines[head + 1 : head + 7]]
    assert [bool(c["message"].get("thinking")) for c in chunks] == [True] * 4 + [False] * 2
    assert chunks[0]["message"]["thinking"] == "I should rea"
    assert chunks[4]["message"]["tool_calls"] and chunks[5]["done"] is True
    assert lines[head + 7].startswith("turn 1 thinking:")  # then what the loop made of them


def test_step_3_the_turn_budget_ends_as_the_readme_says():
    command = "python3 lab.py replay recordings/bounded-max-turns-1.json --transcript"
    _, output = replayed_as_typed(command)
    for said in (
        'turn 1: read_file {"path": "path_rules.py"}',
        "  -> 11 lines of path_rules.py",
        "Stop: max_turns after 1 model call, 1 tool call",
        "Independent verdict: failed",
        "  visible tests: 3 of 4 passed, 1 failed",
    ):
        assert said in output.splitlines()
    assert "--- request 1:" in output and "--- request 2:" not in output


def changed_as_the_readme_does(section, tmp_path):
    """Run the first `python3 - <<'PY'` block of `section` as a learner would, writing
    into `tmp_path` instead of /tmp, then the replay command that follows it on what it
    wrote: (exit code, output)."""
    code, after = section.split("    python3 - <<'PY'\n", 1)[1].split("    PY\n", 1)
    code = "\n".join(line[4:] for line in code.splitlines())
    written = re.search(r'"/tmp/([\w.-]+\.json)"', code)
    target = tmp_path / written.group(1)
    code = code.replace(written.group(0), repr(str(target)))
    subprocess.run([sys.executable, "-c", code], cwd=LAB, check=True)
    command = after.splitlines()[0].strip()
    assert command == f"{LAB_REPLAY}/tmp/{written.group(1)}"  # the copy the block wrote
    return replayed_as_typed(command, moved={f"/tmp/{written.group(1)}": target})


def test_step_4_breaking_a_recording_as_the_readme_does_diverges_as_quoted(tmp_path):
    outcome, output = changed_as_the_readme_does(README.split("### 4. ", 1)[1], tmp_path)
    assert outcome == 1
    assert appear_in_order(quoted_block("DIVERGED (11):"), output) == []
    assert "turn 4: run_tests {}\n  -> exit 1 (1 failed · 3 passed)" in output


def test_step_7_a_tool_that_does_not_exist_is_answered_and_replayed_as_quoted(tmp_path):
    section = README.split("### 7. ", 1)[1].split("\n## ", 1)[0]
    outcome, output = changed_as_the_readme_does(section, tmp_path)
    assert outcome == 1
    assert appear_in_order(quoted_block('turn 1: delete_file {"path"'), output) == []
    # the function the section names is where the error is made
    lines = (LAB / "tool_guard.py").read_text(encoding="utf-8").splitlines()
    number = int(re.search(r"`invoke\(\)` \(line (\d+)\) is where", section).group(1))
    assert lines[number - 1].lstrip().startswith("def invoke(")


# --- outputs quoted further on, from the shipped recordings -------------------------------------


@SHARES_THE_LEARNERS_REPLAY
def test_the_gamed_verdict_reads_as_quoted(learners_replay):
    output = replayed_alone(learners_replay.stdout, "games-the-verdict.json")
    quoted = quoted_block("python3 lab.py replay recordings/games-the-verdict.json")
    assert appear_in_order(quoted, output) == []


def test_compare_on_the_shipped_recordings_prints_as_quoted():
    paths = sorted(str(p) for p in RECORDINGS.glob("*.json"))
    finished = run_cli("compare.py", *paths)
    quoted = quoted_block("$ python3 lab.py run compare.py recordings/*.json")
    assert appear_in_order(quoted, finished.stdout) == []


def test_compare_on_the_impossible_recordings_prints_as_quoted():
    paths = sorted(str(p) for p in (RECORDINGS / "impossible").glob("*.json"))
    finished = run_cli("compare.py", *paths)
    quoted = quoted_block("$ python3 lab.py run compare.py recordings/impossible/*.json")
    assert appear_in_order(quoted, finished.stdout) == []


def test_the_flagged_conflict_replays_as_quoted():
    command = "python3 lab.py replay recordings/impossible/flags-the-conflict.json"
    outcome, output = replayed_as_typed(command)
    assert outcome == 0
    assert appear_in_order(quoted_block(f"$ {command}"), output) == []


def test_the_gallery_table_says_what_each_cheat_recording_holds():
    table = README.split("| cheat (the edit) |", 1)[1].split("\n\n", 1)[0]
    rows = table.splitlines()[2:]
    checked = 0
    for row in rows:
        cheat, said, held_out, verdict = (cell.strip() for cell in row.strip("|").split("|"))
        name = cheat.split("`")[1].removesuffix(".json")
        path = RECORDINGS / f"{name}.json"
        path = path if path.exists() else RECORDINGS / "cheats" / f"{name}.json"
        recording = load(path)
        run = [e["result"] for e in recording["events"] if e["type"] == "tool_result"][-1]
        if run["verdict"] == "passed":
            assert said == f"passed, {run['passed']} of 4"
        else:
            assert said.startswith("failed: ") and said[8:] in run["reason"]
        final = recording["final_tests"]
        assert held_out == f"{final['held_out']['passed']} of {final['held_out']['total']}"
        assert verdict == final["verdict"]
        checked += 1
    assert checked == 35  # the 34 cheats of recordings/cheats/ and games-the-verdict.json


# --- the learner's page: short, linked, and pointing at the right lines --------------------------

CORE_PATH = ("agent_loop.py", "tool_guard.py", "repo_tools.py", "verdict.py", "local_model.py")


@pytest.mark.parametrize("page", ["hooks", "permissions", "context", "one-shot"])
def test_each_extensions_page_gives_its_command_for_both_wires(page):
    # a learner on llama-server (the README's way without Ollama) reads the same page
    text = (LAB / "docs" / f"{page}.md").read_text(encoding="utf-8")
    commands = text.split("\n## Turn ", 1)[1].split("\n\n")[1].splitlines()  # its first block
    runs = [line.split("record_run.py ", 1)[1] for line in commands if "record_run.py " in line]
    assert any(run.startswith("--api openai --model ") for run in runs)  # the OpenAI wire
    assert any("--api" not in run for run in runs)  # and Ollama's, the default


def test_the_readme_is_read_in_one_sitting():
    assert len(README.split()) <= 4000


def slug(heading):
    """The anchor a Markdown renderer gives a heading (GitHub's rule, for plain headings)."""
    return re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")


def test_every_docs_page_is_linked_from_the_readme_and_every_link_resolves():
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", README))
    assert linked == {f"docs/{page.name}" for page in DOCS}
    for page in [LAB / "README.md", *DOCS]:
        for target in re.findall(r"\]\(([^)]+)\)", page.read_text(encoding="utf-8")):
            if target.startswith("http"):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.exists(), f"{page.name}: {target}"
            if anchor:
                headings = re.findall(r"(?m)^#+ (.+)$", file.read_text(encoding="utf-8"))
                assert anchor in {slug(h) for h in headings}, f"{page.name}: {target}"


def test_the_core_path_is_where_the_readme_says():
    table = README.split("## The core path", 1)[1].split("## ", 1)[0]
    checked = 0
    for row in table.splitlines():
        if not row.startswith("| `"):
            continue
        lines = (LAB / row.split("`")[1]).read_text(encoding="utf-8").splitlines()
        for name, number in re.findall(r"`(?:class )?(\w+)(?:\(\))?` \(line (\d+)\)", row):
            assert re.match(rf"\s*(def|class) {name}\b", lines[int(number) - 1]), (name, number)
            checked += 1
    assert checked == 7  # the seven line numbers of the table
    total = sum(len((LAB / name).read_text(encoding="utf-8").splitlines()) for name in CORE_PATH)
    said = re.search(r"Together they are ([\d,]+) lines", table).group(1)
    assert int(said.replace(",", "")) == total


def product_lines(files):
    return sum(len((LAB / name).read_text(encoding="utf-8").splitlines()) for name in files)


def test_the_opening_names_the_core_path_its_size_and_the_rest_of_the_lab():
    opening = README.split("## ", 1)[0]
    said = re.search(r"Its core\s+path is five files, ([\d,]+) lines: (.+?) \(", opening, re.S)
    assert int(said.group(1).replace(",", "")) == product_lines(CORE_PATH)
    assert re.findall(r"`(\w+\.py)`", said.group(2)) == list(CORE_PATH)
    assert "start at\n`AgentLoop.events`" in opening
    assert re.match(r"\s*def events\(self\)", agent_loop_source_of("AgentLoop.events"))
    # the rest: every module of the lab that is not a test, in thousands of lines
    rest = [p.relative_to(LAB).as_posix() for p in [*LAB.glob("*.py"), *LAB.glob("*/*.py")]]
    rest = [p for p in rest if p.split("/")[0] in ("plumbing", "harness", "extensions")
            or ("/" not in p and not p.startswith("test_") and p != "conftest.py")]  # fmt: skip
    thousands = re.search(r"The rest of the lab, about (\d+) thousand\s+lines", opening)
    assert int(thousands.group(1)) == round((product_lines(rest) - product_lines(CORE_PATH)) / 1000)


def agent_loop_source_of(qualified):
    import inspect

    import agent_loop

    owner, name = qualified.split(".")
    return inspect.getsource(getattr(getattr(agent_loop, owner), name))


def test_every_test_a_page_names_exists():
    # a promise backed by a test that no longer exists is a promise no test proves
    named = set(re.findall(r"`(test_\w+)(?:\[[^\]]*\])?`", PAGES))
    files = [*LAB.glob("test_*.py"), *(LAB / "tests").glob("*.py")]
    defined = {n for f in files for n in re.findall(r"def (test_\w+)", f.read_text())}
    assert named and named <= defined, sorted(named - defined)
