"""Hooks (extensions/, `record_run.py --hook NAME`): wrappers of the loop's tools that decide
around each call, with the loop unchanged; what they decided is recorded, shown, and
checked again by replay.

The model is the Ollama stand-in on 127.0.0.1 serving hand-written turns through the real
SDK: nothing here is a model's output. The broken edit is the one the shipped
qwen2.5-coder-1.5b-3.json made at turn 7 (`def sorted(python_sources(changed_paths)):`).
record_run.py's main() runs in the test's process (tests/in_process.py); the tools, the
copies, the pytest runs and the verdicts are the real ones.
"""

import json
import re

import pytest

from extensions import Extensions
from extensions.syntax import compile_problem
from harness import decisions
from harness.page import recording_page
from harness.recording import RECORDINGS, load, save
from harness.recording_checks import RecordingError
from plumbing.sample import SAMPLE_FILES, SOURCE_FILE, SOURCE_LIMIT
from replay import CANNOT_REPLAY, DIVERGED, REPRODUCED
from repo_tools import RepoTools
from tests.helpers import FAULTY_LINE, FIXED_LINE, as_format_7, record, replay
from tests.in_process import run_cli
from tests.ollama_test_server import ConversationServer, OllamaTestServer, call, chunk, reply

SAMPLE = SAMPLE_FILES[SOURCE_FILE].decode("utf-8")
REPAIRED = SAMPLE.replace(FAULTY_LINE, FIXED_LINE)
# the edit recordings/live/qwen2.5-coder-1.5b-3.json made at turn 7
BROKEN = {"old": "python_sources(changed_paths)", "new": "sorted(python_sources(changed_paths))"}
SYNTAX_ERROR = "SyntaxError: invalid syntax (line 4: def sorted(python_sources(changed_paths)):)"


def breaks_then_repairs(tag="a"):
    """Turns that break the module, then repair it, then say so."""
    return [
        reply(
            chunk(thinking=f"Plan {tag}: sort."),
            chunk(tool_calls=[call("replace_text", **BROKEN)]),
            chunk(done=True),
        ),
        reply(
            chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new=FIXED_LINE)]),
            chunk(done=True),
        ),
        reply(chunk("Fixed."), chunk(done=True)),
    ]


def tool_results(body):
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


# subtle: a module fixture is made once per xdist worker, so the tests that read the one
# run carry the same xdist_group mark (`--dist loadgroup`, lab.py's test job).
SHARES_THE_RUN = pytest.mark.xdist_group("hooks-both-on")


@pytest.fixture(scope="module")
def hooked(tmp_path_factory):
    """(the run, the request bodies, the recording's path) of one attempt with both hooks
    on, named in the order opposite to the one they wrap in."""
    output = tmp_path_factory.mktemp("hooks") / "hooked.json"
    with OllamaTestServer(breaks_then_repairs()) as server:
        done = record("--host", server.host, "--hook", "tests-after-edit", "--hook", "syntax",
                      "--output", output)  # fmt: skip
        bodies = server.chat_bodies()
    return done, bodies, output


@SHARES_THE_RUN
def test_an_edit_that_breaks_the_module_is_undone_and_the_model_reads_why(hooked):
    done, bodies, path = hooked
    assert done.returncode == 0, done.stdout + done.stderr
    undone = tool_results(bodies[1])[0]  # what the model read before its second turn
    assert list(undone) == ["error"] and "Your edit was undone" in undone["error"]
    assert SYNTAX_ERROR in undone["error"]
    recording = load(path)
    # nothing of the broken edit is left: the repair applied to the file put back
    assert recording["final_source"] == REPAIRED
    assert recording["final_tests"]["verdict"] == "passed"
    # which are on, said before the first turn, and each decision shown in the terminal as
    # the run went, after its call's result
    lines = done.stdout.splitlines()
    assert lines.index("Extensions on: syntax, tests-after-edit (docs/hooks.md)") < lines.index(
        "turn 1 thinking: Plan a: sort."
    )
    at = lines.index(f"  [syntax] undone: {SYNTAX_ERROR}")
    assert lines[at - 1].startswith("  -> error: Your edit was undone")


@SHARES_THE_RUN
def test_tests_after_edit_adds_the_visible_tests_summary_to_the_edit_that_landed(hooked):
    done, bodies, path = hooked
    repaired = tool_results(bodies[2])[1]
    assert repaired["replaced"] == 1
    assert repaired["tests_after_edit"] == "4 passed (verdict: passed)"
    assert "  [tests-after-edit] added: 4 passed (verdict: passed)" in done.stdout.splitlines()
    # the undone edit ran no tests: the syntax hook wraps first, whatever the flags' order
    recording = load(path)
    ran = recording["extensions"]["decisions"][2].pop("tests")  # the run kept whole
    assert (ran["verdict"], ran["passed"], ran["exit_code"]) == ("passed", 4, 0)
    assert "4 passed in " in ran["output"]
    assert recording["extensions"] == {
        "on": [{"name": "syntax", "settings": {}}, {"name": "tests-after-edit", "settings": {}}],
        "decisions": [
            {"extension": "syntax", "call": 1, "decision": "undone", "said": SYNTAX_ERROR},
            {"extension": "syntax", "call": 2, "decision": "kept",
             "said": "path_rules.py compiles"},
            {"extension": "tests-after-edit", "call": 2, "decision": "added",
             "said": "4 passed (verdict: passed)"},
        ],
    }  # fmt: skip


@SHARES_THE_RUN
def test_a_hooked_recording_replays_with_the_same_hooks_and_reproduces(hooked):
    _, _, path = hooked
    outcome, output = replay(path)
    assert outcome == REPRODUCED, output
    assert f"  [syntax] undone: {SYNTAX_ERROR}" in output.splitlines()
    assert "  [tests-after-edit] added: 4 passed (verdict: passed)" in output.splitlines()


@SHARES_THE_RUN
def test_a_hooked_recording_of_format_7_replays_without_the_test_runs_it_never_kept(
    hooked, tmp_path
):
    recording = load(hooked[2])
    as_format_7(recording)  # made before the hook kept its test runs
    save(tmp_path / "kept.json", recording)
    with pytest.raises(RecordingError, match="decisions.2..tests' is a field format '.*/7' can"):
        load(tmp_path / "kept.json")
    recording["extensions"]["decisions"][2].pop("tests")
    save(tmp_path / "seven.json", recording)
    outcome, output = replay(tmp_path / "seven.json")
    assert outcome == REPRODUCED, output
    assert "  [tests-after-edit] added: 4 passed (verdict: passed)" in output.splitlines()


@SHARES_THE_RUN
def test_a_decision_changed_by_hand_replays_as_diverged_naming_it(hooked, tmp_path):
    _, _, path = hooked
    recording = load(path)
    recording["extensions"]["decisions"][0]["decision"] = "kept"
    save(tmp_path / "changed.json", recording)
    outcome, output = replay(tmp_path / "changed.json")
    assert outcome == DIVERGED
    assert (
        "  the extensions' decisions: extensions.decisions[0].decision: the recording says "
        '"kept", today\'s run did "undone"'
    ) in output.splitlines()
    # the hook's test run is compared as a run_tests result is
    recording = load(path)
    recording["extensions"]["decisions"][2]["tests"]["passed"] = 3
    save(tmp_path / "ran.json", recording)
    outcome, output = replay(tmp_path / "ran.json")
    assert outcome == DIVERGED
    assert "extensions.decisions[2].tests.passed: the recording says 3, today's run did 4" in output
    # without its hooks the same turns go another way: the broken edit stays
    del recording["extensions"]
    save(tmp_path / "unhooked.json", recording)
    outcome, output = replay(tmp_path / "unhooked.json")
    assert outcome == DIVERGED and "tool call 1 (model call 1, replace_text) result" in output


MALFORMED = [
    (lambda e: e.pop("decisions"), "'extensions' must be {on, decisions}"),
    (lambda e: e.update(on=[]), "'extensions.on' must be a list of at least one {name, settings}"),
    (lambda e: e["on"][0].update(name=""), "'extensions.on' names must be distinct, non-empty"),
    (lambda e: e["on"].append(dict(e["on"][0])), "'extensions.on' names must be distinct"),
    (lambda e: e["on"][0].update(settings=[]), "'extensions.on' settings must be objects"),
    (lambda e: e.update(decisions={}), "'extensions.decisions' must be a list"),
    (lambda e: e["decisions"][0].pop("said"), "'extensions.decisions[0]' must be {extension,"),
    (lambda e: e["decisions"][0].update(extension="approve"),
     "'extensions.decisions[0].extension' must name an extension in 'extensions.on'"),
    (lambda e: e["decisions"][0].update(call=3),
     "'extensions.decisions[0].call' must be a call the tools ran, 1 to 2, in order"),
    (lambda e: e["decisions"][2].update(call=1),
     "'extensions.decisions[2].call' must be a call the tools ran, 2 to 2, in order"),
    (lambda e: e["decisions"][0].update(call=True), "'extensions.decisions[0].call' must be"),
    (lambda e: e["decisions"][0].update(decision=""), "'extensions.decisions[0].decision' must"),
    (lambda e: e["decisions"][0].update(said=None), "'extensions.decisions[0].said' must be text"),
    (lambda e: e["on"].append({"name": "x"}), "'extensions.on' must be a list of at least one"),
    (lambda e: e["on"].__setitem__(0, ["name", "settings"]), "'extensions.on' must be a list of"),
    (lambda e: e["on"][0].update(name=5), "'extensions.on' names must be distinct, non-empty text"),
    (lambda e: e["decisions"][0].update(decision=5), "'extensions.decisions[0].decision' must"),
    # the test run tests-after-edit made is kept beside its added decision, and only there
    (lambda e: e["decisions"][2].pop("tests"),
     "'extensions.decisions[2].tests' is missing (the test run it made)"),
    (lambda e: e["decisions"][1].update(tests={}),
     "'extensions.decisions[1].tests' is held only by an added decision of tests-after-edit"),
    (lambda e: e["decisions"][2].update(tests=["passed"]),
     "'extensions.decisions[2].tests' must be a test run, its by_test an object of names"),
    (lambda e: e["decisions"][2]["tests"].update(by_test={"test_x": 1}),
     "'extensions.decisions[2].tests' must be a test run, its by_test an object of names"),
    # the run's tools ran 2 calls: from call 3, the next, is the latest an extension may act
    (lambda e: e["on"][1]["settings"].update(from_call=4),
     "'extensions.on[1].settings.from_call' is 4, past the calls the tools ran: an extension "
     "acts from one of them, or from the call after the last, at most 3"),
    # the seconds a person took (--approve) are optional; when said, a number of seconds
    (lambda e: e["decisions"][0].update(seconds=-1), "'extensions.decisions[0].seconds' must be"),
    (lambda e: e["decisions"][0].update(seconds="2"), "'extensions.decisions[0].seconds' must be"),
    (lambda e: e["decisions"][0].update(took=1), "'extensions.decisions[0]' must be {extension,"),
]  # fmt: skip


@SHARES_THE_RUN
@pytest.mark.parametrize("change, says", MALFORMED)
def test_the_loader_refuses_a_malformed_extensions_field_in_one_line(hooked, tmp_path, change,
                                                                     says):  # fmt: skip
    recording = load(hooked[2])
    change(recording["extensions"])
    save(tmp_path / "bad.json", recording)
    with pytest.raises(RecordingError) as refused:
        load(tmp_path / "bad.json")
    assert f"bad.json: field {says}" in str(refused.value)
    assert "\n" not in str(refused.value)


@SHARES_THE_RUN
def test_an_extension_may_act_from_the_call_after_the_runs_last(hooked, tmp_path):
    # as one a fork turned on before a live turn that called no tool
    recording = load(hooked[2])
    recording["extensions"]["on"][1]["settings"]["from_call"] = 3
    save(tmp_path / "next.json", recording)
    assert load(tmp_path / "next.json")["extensions"] == recording["extensions"]


@SHARES_THE_RUN
def test_a_field_that_is_not_an_object_is_refused_in_one_line(hooked, tmp_path):
    recording = load(hooked[2])
    recording["extensions"] = ["on", "decisions"]
    save(tmp_path / "list.json", recording)
    with pytest.raises(RecordingError, match=re.escape("'extensions' must be {on, decisions}")):
        load(tmp_path / "list.json")


def test_a_decision_is_about_the_nth_call_the_tools_ran():
    def event(kind, index, turn=1):
        return {"type": kind, "turn": turn, "index": index}

    # past MAX_CALLS_RUN (32) a call is answered with an error and never reaches the tools
    starts = [event("tool_start", i) for i in (31, 32)]
    assert decisions.calls_made(starts) == starts[:1]
    # a run cut during its 2nd call decided about it; its replay stops before that call
    made = [event("tool_start", 0), event("tool_result", 0), event("tool_start", 1)]
    said = [{"call": 1}, {"call": 2}]
    assert decisions.answered(said, made) == said[:1]


@SHARES_THE_RUN
def test_only_the_newest_format_holds_extensions_and_replay_refuses_one_it_lacks(hooked, tmp_path):
    recording = load(hooked[2])  # the loader checks the shape; replay, the names it knows
    recording["extensions"] = {"on": [{"name": "summarise", "settings": {}}], "decisions": []}
    save(tmp_path / "unknown.json", recording)
    assert load(tmp_path / "unknown.json")["extensions"] == recording["extensions"]
    outcome = replay(tmp_path / "unknown.json")[0]
    assert outcome == CANNOT_REPLAY
    with pytest.raises(RecordingError, match="unknown.json: extension 'summarise' is not one this"):
        Extensions.of(recording, path="unknown.json")
    old = load(RECORDINGS / "live/qwen2.5-coder-1.5b-1.json")  # format /4
    old["extensions"] = {"on": [{"name": "syntax", "settings": {}}], "decisions": []}
    save(tmp_path / "old.json", old)
    with pytest.raises(RecordingError, match="'extensions' is a field format '.*/4' cannot hold"):
        load(tmp_path / "old.json")


def test_an_unknown_hook_is_refused_by_argparse_in_one_line():
    done = record("--hook", "nonsense")
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert errors == [
        "record_run.py: error: argument --hook: invalid choice: 'nonsense' "
        "(choose from 'syntax', 'tests-after-edit')"
    ]


def test_a_fork_with_a_hook_undoes_the_live_models_broken_edit_and_replays(tmp_path):
    # repair.json's turns 1 and 2 are reads: the hook decides nothing about them
    output = tmp_path / "fork.json"
    with OllamaTestServer(breaks_then_repairs()) as server:
        done = run_cli("record_run.py", "--host", server.host, "--fork", "recordings/repair.json",
                       "--at", 3, "--hook", "syntax", "--output", output)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    recording = load(output)
    assert recording["source"] == "forked" and recording["final_source"] == REPAIRED
    assert recording["extensions"]["on"] == [{"name": "syntax", "settings": {"from_call": 3}}]
    decisions = recording["extensions"]["decisions"]
    assert [(d["call"], d["decision"]) for d in decisions] == [(3, "undone"), (4, "kept")]
    assert replay(output)[0] == REPRODUCED
    # a fork of it keeps its hook for the turns it replays, without being told again
    again = tmp_path / "again.json"
    with OllamaTestServer([reply(chunk("Fixed."), chunk(done=True))]) as server:
        done = run_cli("record_run.py", "--host", server.host, "--fork", output, "--at", 5,
                       "--output", again)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert load(again)["extensions"]["decisions"] == decisions


def test_a_hook_a_fork_adds_acts_from_its_first_live_call(tmp_path):
    # repair.json's turn 3 edit landed: had tests-after-edit acted on it, its result would
    # differ from the recorded one, and the fork would stop before asking the live model
    comment = {"old": "sources = []", "new": "sources = []  # in order"}
    script = [
        reply(chunk(tool_calls=[call("replace_text", **comment)]), chunk(done=True)),
        reply(chunk("Done."), chunk(done=True)),
    ]
    output = tmp_path / "fork.json"
    with OllamaTestServer(script) as server:
        done = run_cli("record_run.py", "--host", server.host, "--fork", "recordings/repair.json",
                       "--at", 4, "--hook", "tests-after-edit", "--output", output)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Extensions on: tests-after-edit (from_call 4) (docs/hooks.md)" in done.stdout
    recording = load(output)
    (decision,) = recording["extensions"]["decisions"]
    assert decision.pop("tests")["verdict"] == "passed"  # the test run, kept whole
    assert recording["extensions"] == {
        "on": [{"name": "tests-after-edit", "settings": {"from_call": 4}}],
        "decisions": [{"extension": "tests-after-edit", "call": 4, "decision": "added",
                       "said": "4 passed (verdict: passed)"}],
    }  # fmt: skip
    assert replay(output)[0] == REPRODUCED
    recording["extensions"]["on"][0]["settings"] = {"from_call": 0}
    save(tmp_path / "bad.json", recording)
    with pytest.raises(RecordingError, match='must be {} or {"from_call": N}, N from 1'):
        Extensions.of(recording, path="bad.json")


def test_a_fork_adds_its_own_hooks_from_its_first_live_call_and_keeps_its_parents():
    parent = load(RECORDINGS / "repair.json")  # turns 1 and 2 read, turn 3 edits
    assert Extensions.of(parent, ["syntax"]).on == [{"name": "syntax", "settings": {}}]
    assert Extensions.of(parent, ["syntax"], at=1).on == [{"name": "syntax", "settings": {}}]
    at_2 = [{"name": "syntax", "settings": {"from_call": 2}}]  # after turn 1's one call
    assert Extensions.of(parent, ["syntax"], at=2).on == at_2
    from_1 = [{"name": "syntax", "settings": {"from_call": 1}}]
    assert Extensions.of({**parent, "extensions": {"on": from_1}}).on == from_1
    at_4 = [{"name": "syntax", "settings": {"from_call": 4}}]
    assert Extensions.of(parent, ["syntax"], at=4).on == at_4
    parent["extensions"] = {"on": at_4, "decisions": []}
    assert Extensions.of(parent, ["syntax", "tests-after-edit"], at=5).on == [
        *at_4,
        {"name": "tests-after-edit", "settings": {"from_call": 5}},
    ]


def test_a_forks_extensions_act_from_its_first_live_call_whatever_call_its_parent_names():
    # a parent (a fork at a later turn, or a file edited) whose extensions say they act from
    # call 4: forked at turn 3, each acts from call 3, the first live one, told again or not
    parent = load(RECORDINGS / "repair.json")
    later = {"from_call": 4}
    parent["extensions"] = {"on": [{"name": n, "settings": later} for n in ("syntax", "plan")],
                            "decisions": []}  # fmt: skip
    from_3 = {"from_call": 3}
    asked = Extensions.of(parent, ["tests-after-edit", "plan", "syntax", "approve"], at=3)
    assert asked.on == [{"name": n, "settings": from_3}
                        for n in ("syntax", "tests-after-edit", "plan", "approve")]  # fmt: skip
    kept = Extensions.of(parent, at=3)
    assert kept.on == [{"name": n, "settings": from_3} for n in ("syntax", "plan")]
    # the replayed calls go as they went: one that acted from call 2 still does
    parent["extensions"]["on"][0]["settings"] = {"from_call": 2}
    assert Extensions.of(parent, ["syntax"], at=3).on[0]["settings"] == {"from_call": 2}
    # a replay applies the recording's own settings as they are
    assert Extensions.of(parent).on[1]["settings"] == later


def test_each_attempt_of_a_series_runs_the_hooks_it_was_given(tmp_path):
    output = tmp_path / "series.json"
    with ConversationServer([breaks_then_repairs("a"), breaks_then_repairs("b")]) as server:
        done = record("--host", server.host, "--attempts", 2, "--hook", "syntax",
                      "--output", output)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  attempt 2: turn 3, the model" in done.stdout  # the series still shows its steps
    for k in (1, 2):
        recording = load(tmp_path / f"series-{k}.json")
        assert [d["decision"] for d in recording["extensions"]["decisions"]] == ["undone", "kept"]


def test_compile_problem_says_the_error_and_its_line_in_one_line_of_bounded_length():
    long_line = b"x = '" + b"y" * 500 + b"\n"
    said = compile_problem(long_line)
    assert said.startswith("SyntaxError: unterminated string literal")
    assert said.endswith("(line 1: x = '" + "y" * 195 + ")")  # cut at 200 characters
    assert compile_problem(b"x = 1\n\0").endswith("null bytes")  # a ValueError on 3.10
    deep = compile_problem(b"x = " + b"-" * 100_000 + b"1")  # too deep for the parser
    assert deep and not deep.endswith(": ")  # 3.11's MemoryError has no text: it is said
    assert compile_problem(SAMPLE.encode()) is None


def test_the_syntax_hook_puts_the_file_back_byte_for_byte_and_lets_other_calls_through(repo):
    path = repo / SOURCE_FILE
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))  # bytes an edit must not lose
    before = path.read_bytes()
    extensions = Extensions(["syntax"])
    tools = extensions.tools(RepoTools)(repo)
    assert tools.schemas == RepoTools.schemas  # the model is offered the same tools
    assert "SyntaxError" in tools.invoke("replace_text", BROKEN)["error"]
    assert path.read_bytes() == before
    assert "text" in tools.invoke("read_file", {"path": SOURCE_FILE})
    path.unlink()  # a call that is no edit passes without the hook reading the source
    assert "text" in tools.invoke("read_file", {"path": "tests/test_path_rules.py"})
    path.write_bytes(before)
    assert "was not found" in tools.invoke("replace_text", {"old": "nowhere", "new": "x"})["error"]
    assert [d["call"] for d in extensions.log.decisions] == [1]  # about the edit that landed
    later = Extensions(["syntax"], {"syntax": {"from_call": 2}})
    tools = later.tools(RepoTools)(repo)
    assert "SyntaxError" not in str(tools.invoke("replace_text", BROKEN))  # call 1: untouched
    assert later.log.decisions == [] and later.log.calls == 1


def padded(size):
    """The sample's source and one comment line after it, `size` bytes in all."""
    source = SAMPLE.encode() + b"# "
    return source + b"x" * (size - len(source))


def test_the_syntax_hook_runs_no_edit_of_a_file_larger_than_it_keeps_whole(repo):
    # 2 MB, as an earlier edit or the tests' code could leave it: kept only in part, an edit
    # that did not compile was put back cut at 1,000,001 bytes, the model told "as it was"
    path = repo / SOURCE_FILE
    path.write_bytes(padded(2_000_000))
    extensions = Extensions(["syntax"])
    result = extensions.tools(RepoTools)(repo).invoke("replace_text", BROKEN)
    assert path.read_bytes() == padded(2_000_000)  # whole, and the edit never ran
    said = f"{SOURCE_FILE} is larger than {SOURCE_LIMIT:,} bytes: too large to keep whole"
    assert result["error"].startswith(f"Your edit was not run: {said}, and the syntax hook")
    assert [(d["decision"], d["said"]) for d in extensions.log.decisions] == [("declined", said)]


def test_the_syntax_hook_puts_back_a_file_of_exactly_its_limit_whole(repo):
    path = repo / SOURCE_FILE
    path.write_bytes(padded(SOURCE_LIMIT))
    extensions = Extensions(["syntax"])
    tools = extensions.tools(RepoTools)(repo)
    broken = {"old": "def python_sources", "new": "de python_sources"}  # a byte shorter
    assert "SyntaxError" in tools.invoke("replace_text", broken)["error"]
    assert path.read_bytes() == padded(SOURCE_LIMIT)
    assert [d["decision"] for d in extensions.log.decisions] == ["undone"]


def test_a_hook_that_fails_is_a_result_and_a_decision_never_an_exception(repo):
    extensions = Extensions(["tests-after-edit", "syntax"])
    tools, log = extensions.tools(RepoTools)(repo), extensions.log
    (repo / SOURCE_FILE).unlink()  # the syntax hook cannot read the file it would put back
    result = tools.invoke("replace_text", BROKEN)
    assert result == {
        "error": "the syntax hook failed (FileNotFoundError: [Errno 2] No such file or "
        f"directory: '{repo / SOURCE_FILE}'); the call may have run"
    }
    assert [(d["extension"], d["decision"]) for d in log.decisions] == [("syntax", "failed")]


@SHARES_THE_RUN
def test_the_page_shows_each_decision_under_its_call(hooked):
    page = recording_page(load(hooked[2]), "hooked.json")
    assert "syntax, tests-after-edit" in page
    assert "[syntax] undone: SyntaxError: invalid syntax (line 4: def sorted(" in page
    assert page.index("[syntax] kept") < page.index("[tests-after-edit] added: 4 passed")
    assert page.index("[syntax] undone") < page.index('id="turn-2"') < page.index("[syntax] kept")
    # a file of many long decisions about one call still makes a page of bounded size
    recording = load(hooked[2])
    many = {**recording["extensions"]["decisions"][0], "said": "x" * 1_000}
    recording["extensions"]["decisions"][:1] = [many] * 5_000
    page = recording_page(recording, "many.json")
    assert "... and 4,900 more" not in page  # cut first at 20,000 characters, and says so
    assert (
        "more characters" in page and len(page) < len(recording_page(load(hooked[2]), "")) + 30_000
    )


@SHARES_THE_RUN
def test_the_hooked_run_docs_hooks_md_quotes_is_what_it_prints(hooked):
    from tests.test_readme import appear_in_order, quoted_block

    assert appear_in_order(quoted_block("Extensions on: "), hooked[0].stdout) == []
