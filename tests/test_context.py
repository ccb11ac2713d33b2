"""Context management (extensions/keep_results.py, `record_run.py --keep-results N`): each
request sends the last N tool results whole and the older ones as one line; the loop's
conversation stays whole; the recording says what was sent, and replay sends the same.

The model is the Ollama stand-in on 127.0.0.1 serving hand-written turns through the real
SDK (nothing here is a model's output); record_run.py's main() runs in this process.
"""

import json

import pytest

from agent_loop import AgentLoop
from extensions import Extensions
from harness.decisions import as_sent
from harness.page import recording_page
from harness.recording import load, save
from plumbing.exit_codes import EXIT_ERROR
from plumbing.sample import SOURCE_FILE, TEST_FILE
from replay import DIVERGED, REPRODUCED
from repo_tools import RepoTools
from tests.helpers import record, replay
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

FIRST = f"[read_file {SOURCE_FILE}: 11 lines, sent in turn 2]"


def turn(*calls):
    return reply(chunk(tool_calls=list(calls)), chunk(done=True))


def contents(body):
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """(the run, the request bodies, the recording's path) of --keep-results 1 over three
    calls: two reads and a test run."""
    output = tmp_path_factory.mktemp("keep") / "kept.json"
    script = [
        turn(call("read_file", path=SOURCE_FILE)),
        turn(call("read_file", path=TEST_FILE)),
        turn(call("run_tests")),
        reply(chunk("Not fixed."), chunk(done=True)),
    ]
    with OllamaTestServer(script) as server:
        done = record("--host", server.host, "--keep-results", 1, "--output", output)
        bodies = server.chat_bodies()
    return done, bodies, output


SHARES_THE_RUN = pytest.mark.xdist_group("keep-results-1")


@SHARES_THE_RUN
def test_old_results_are_sent_as_one_line_and_the_conversation_stays_whole(kept):
    done, bodies, path = kept
    assert done.returncode == 1, done.stdout + done.stderr
    sent = [contents(body) for body in bodies]
    assert json.loads(sent[1][0])["path"] == SOURCE_FILE  # turn 2: the one result, whole
    assert sent[2][0] == FIRST and json.loads(sent[2][1])["path"] == TEST_FILE
    tests = f"[read_file {TEST_FILE}: 18 lines, sent in turn 3]"
    assert sent[3][:2] == [FIRST, tests] and json.loads(sent[3][2])["verdict"] == "failed"
    recording = load(path)
    held = [m["content"] for m in recording["messages"] if m["role"] == "tool"]
    assert all(json.loads(content) for content in held)  # the conversation: every one whole
    assert [(d["call"], d["said"]) for d in recording["extensions"]["decisions"]] == [
        (2, FIRST),
        (3, tests),
    ]
    assert recording["extensions"]["on"] == [{"name": "keep-results", "settings": {"keep": 1}}]
    lines = done.stdout.splitlines()  # after the turn's text, never inside it
    assert (
        lines.index(f"  [keep-results] shortened: {FIRST}")
        == lines.index("turn 3: run_tests {}") - 1
    )


@SHARES_THE_RUN
def test_the_recording_says_what_each_request_sent(kept):
    _, bodies, path = kept
    recording = load(path)
    for number, body in enumerate(bodies, 1):
        request = as_sent(recording, number)
        assert len(request) == len(body["messages"])
        assert [m["content"] for m in request if m["role"] == "tool"] == contents(body)


@SHARES_THE_RUN
def test_replay_sends_the_same_lines_and_a_changed_one_diverges(kept, tmp_path):
    outcome, output = replay(kept[2])
    assert outcome == REPRODUCED, output
    recording = load(kept[2])
    recording["extensions"]["decisions"][0]["said"] = "[read_file path_rules.py: 2 lines]"
    save(tmp_path / "changed.json", recording)
    outcome, output = replay(tmp_path / "changed.json")
    assert outcome == DIVERGED
    assert "model call 3 (its request is messages[:6] in the file): messages[3].content" in output
    assert "the extensions' decisions: extensions.decisions[0].said" in output


@SHARES_THE_RUN
@pytest.mark.parametrize(
    "settings",
    [{}, {"from_call": 1}, {"keep": 0}, {"keep": 1, "of": 2}, {"keep": 2, "from_call": 0}],
)
def test_a_recording_whose_keep_results_says_no_count_is_refused_in_one_line(
    kept, tmp_path, settings
):
    # the loader checks the field's shape (harness/decisions.py); the count is keep-results'
    # own to check: without it, its requests could not be sent again as they were sent
    recording = load(kept[2])
    recording["extensions"]["on"][0]["settings"] = settings
    save(tmp_path / "no-count.json", recording)
    done = run_cli("replay.py", tmp_path / "no-count.json")
    assert done.returncode == EXIT_ERROR, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"error: {tmp_path / 'no-count.json'}: the settings of extension 'keep-results' must "
        'be {"keep": N} or {"keep": N, "from_call": M}, N and M from 1'
    ]
    assert "Recording:" not in done.stdout  # refused before anything is replayed


@SHARES_THE_RUN
def test_the_page_shows_what_the_conversation_held_and_what_was_sent(kept):
    page = recording_page(load(kept[2]), "kept.json")
    grew = page[page.index('class="grew"') : page.index("</div>", page.index('class="grew"'))]
    assert grew.count(" held; ") == 4 and "[keep-results] shortened: [read_file" in page


def test_the_wrapper_changes_the_request_alone(repo):
    requests = []

    def chat(messages, tools):
        requests.append(messages)
        calls = [call("read_file", path=SOURCE_FILE)] if len(requests) < 4 else []
        return iter([{"message": {"content": "" if calls else "Done.", "tool_calls": calls},
                      "done": True}])  # fmt: skip

    extensions = Extensions(["keep-results"], {"keep-results": {"keep": 2}})
    loop = AgentLoop(extensions.chat(chat), extensions.tools(RepoTools)(repo), "Read it.")
    list(loop.events())
    assert [sum(m["role"] == "tool" for m in r) for r in requests] == [0, 1, 2, 3]
    assert requests[3][3]["content"] == FIRST  # of three, the oldest one is a line
    assert [m["content"] for m in requests[3][5:]] == [m["content"] for m in loop.messages[5:8]]
    assert all(json.loads(m["content"]) for m in loop.messages if m["role"] == "tool")
    assert [d["call"] for d in extensions.log.decisions] == [3]  # 3 calls had run by then


@pytest.mark.parametrize("value", ["0", "x", "-1"])
def test_a_count_that_is_not_a_positive_whole_number_is_refused_in_one_line(value):
    done = record("--keep-results", value)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert errors == [
        f"record_run.py: error: argument --keep-results: must be a positive whole number, "
        f"got {value!r}"
    ]


@SHARES_THE_RUN
def test_the_run_docs_context_md_quotes_is_what_it_prints(kept):
    from tests.test_readme import appear_in_order, quoted_block

    assert appear_in_order(quoted_block("  [keep-results] shortened"), kept[0].stdout) == []
