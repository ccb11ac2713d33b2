"""Tests of a series of attempts (record_run.py --attempts), its figures, compare.py and the
context window in the timeline.

Series run the real record_run.py, through the real SDK, against
ollama_test_server.ConversationServer: one hand-written script per attempt, so that with
--jobs the replies of two attempts cannot cross. Nothing here is a model's output.

record_run.py's and compare.py's main() run in the test's own process (tests/in_process.py);
each attempt of a series is still a record_run.py program, as the series starts it. Ctrl-C
during a series is tests/test_ctrl_c.py's.
"""

import os
import re
import threading
import time
from pathlib import Path

import pytest

from compare import NOT_A_MODEL, rate_bar
from harness.outcomes import outcome, passed
from harness.recording import RECORDINGS, load
from harness.timeline import context_lines, context_window
from plumbing.stats import wilson_interval
from replay import REPRODUCED, replay_one
from tests import openai_test_server as openai
from tests.helpers import altered, failing, passing, record
from tests.in_process import run_cli
from tests.ollama_test_server import ConversationServer, call, chunk, reply

HERE = Path(__file__).resolve().parent.parent


def reading(tag):
    """An attempt that reads a file: with --max-turns 1 it stops at max_turns, unrepaired."""
    read = call("read_file", path="path_rules.py")
    return [reply(chunk(thinking=f"Plan {tag}: read."), chunk(tool_calls=[read]), chunk(done=True))]


def series(conversations, output, *options):
    with ConversationServer(conversations) as server:
        finished = record("--host", server.host, "--output", output, *options)
    return finished


def attempt_lines(stdout):
    return [line for line in stdout.splitlines() if "] attempt " in line]


# --- the statistics ---------------------------------------------------------------------------


def test_wilson_interval_matches_published_and_hand_computed_values():
    # Newcombe, "Two-sided confidence intervals for the single proportion: comparison of
    # seven methods", Statistics in Medicine 17 (1998) 857-872, Table II, method 3 (score
    # interval without continuity correction), to the 4 decimals printed there.
    published = {(81, 263): (0.2553, 0.3662), (15, 148): (0.0624, 0.1605),
                 (0, 20): (0.0, 0.1611), (1, 29): (0.0061, 0.1718)}  # fmt: skip
    for (k, n), expected in published.items():
        assert [round(x, 4) for x in wilson_interval(k, n)] == list(expected), (k, n)
    # 2 of 3 by hand, z = 1.96: p = 2/3, z²/n = 1.2805, centre = (p + z²/2n)/(1 + z²/n)
    # = 1.3069/2.2805 = 0.5731; half = z·sqrt(p(1-p)/n + z²/4n²)/(1 + z²/n)
    # = 1.96·sqrt(0.07407 + 0.10671)/2.2805 = 0.3654; so 0.2077 to 0.9385.
    assert [round(x, 4) for x in wilson_interval(2, 3)] == [0.2077, 0.9385]


def test_wilson_interval_stays_inside_0_to_1_and_is_none_without_attempts():
    assert wilson_interval(0, 0) is None
    for n in range(1, 101):
        for k in range(n + 1):
            low, high = wilson_interval(k, n)
            assert 0.0 <= low <= k / n <= high <= 1.0, (k, n)
    low, high = wilson_interval(5, 5)
    assert high == 1.0 and 0.5 < low < 0.6  # 5 of 5 still leaves room below 100%
    with pytest.raises(ValueError):
        wilson_interval(4, 3)


def test_verdict_is_the_report_verdict_when_present_else_the_exit_code():
    assert passed({"final_tests": {"exit_code": 0}, "tests_unchanged": True})
    assert not passed({"final_tests": {"exit_code": 1}})
    # interrupted: no verdict, and False as every answer is a bool (Outcome.passed: bool)
    assert passed({"final_tests": None}) is False
    assert not passed({"final_tests": {"exit_code": 0}, "tests_unchanged": False})
    # pytest's report verdict wins over the exit code, both ways (issue 10's field)
    assert not passed({"final_tests": {"exit_code": 0, "verdict": "failed"}})
    assert passed({"final_tests": {"exit_code": 0, "verdict": "passed"}})


# --- record_run.py --attempts -----------------------------------------------------------------


def test_series_records_each_attempt_and_summarises_two_of_three(tmp_path):
    output = tmp_path / "runs" / "series.json"
    with ConversationServer([passing("a"), failing("b"), passing("c")]) as server:
        finished = record("--host", server.host, "--output", output, "--attempts", 3)
    assert finished.returncode == 1, finished.stdout + finished.stderr  # not every one passed
    # the header names the server, as a single run's does
    assert finished.stdout.splitlines()[0] == (
        f"Model: gemma4:e2b (live, {server.host})  |  3 attempts, up to 1 at once"
    )
    paths = [tmp_path / "runs" / f"series-{k}.json" for k in (1, 2, 3)]
    assert sorted(tmp_path.joinpath("runs").iterdir()) == paths  # and no series.json
    assert [passed(load(p)) for p in paths] == [True, False, True]
    lines = attempt_lines(finished.stdout)
    assert lines == [
        "[1/3] attempt 1: passed · assistant_finished · 2 model calls · 1 tool call · "
        + lines[0].rsplit(" · ", 1)[1],
        "[2/3] attempt 2: failed · assistant_finished · 1 model call · 0 tool calls · "
        + lines[1].rsplit(" · ", 1)[1],
        "[3/3] attempt 3: passed · assistant_finished · 2 model calls · 1 tool call · "
        + lines[2].rsplit(" · ", 1)[1],
    ]
    # piped, each attempt says each turn as it begins (series_progress.py), before its line
    said = finished.stdout.split("[1/3] attempt 1:")[0].splitlines()
    assert said[-3:] == [
        "  attempt 1: turn 1, the model",
        "  attempt 1: turn 2, the model",
        "  attempt 1: the final verdict",
    ]
    assert "  attempt 2: turn 1, the model" in finished.stdout.split("[2/3] attempt 2:")[0]
    assert "passed 2 of 3 (67%; 95% interval 21%-94%)" in finished.stdout
    assert "stops: assistant_finished 3" in finished.stdout
    assert "medians: model calls 2 · tool calls 1 · seconds" in finished.stdout
    # the stand-in's made-up counters: 100 prompt and 10 generated tokens per request
    assert "median tokens: prompt 200 · generated 20" in finished.stdout
    assert "Traceback" not in finished.stderr
    out = open(os.devnull, "w")
    assert all(replay_one(p, out=out) == REPRODUCED for p in paths)  # ordinary recordings


# subtle: a module fixture is made once per xdist worker, so the tests that share one run
# carry the same xdist_group mark (`--dist loadgroup`, lab.py's test job): one worker runs it.
SHARES_THE_CUT_OFF_TURN = pytest.mark.xdist_group("attempts-cut-off-turn")
SHARES_THE_RUNS_BY_MAX_TURNS = pytest.mark.xdist_group("attempts-by-max-turns")


@pytest.fixture(scope="module")
def cut_off(tmp_path_factory):
    """(the run, its recording's path) of one attempt (the default) whose only turn is cut
    off: the server sends one chunk, waits 0.5 s, and ends the stream without a done chunk."""
    cut = reply(chunk("Thinking about it"), pause_after_first=0.5)  # no done chunk
    output = tmp_path_factory.mktemp("cut") / "cut.json"
    return series([[cut]], output), output


@SHARES_THE_CUT_OFF_TURN
def test_an_attempt_cut_off_mid_turn_counts_the_time_it_waited(cut_off):
    # No model_done times a turn that never ended; the loop's own wall time does.
    finished, output = cut_off
    assert finished.returncode == 1, finished.stdout + finished.stderr
    recording = load(output)
    assert recording["stop"]["reason"] == "incomplete_model_turn"
    assert recording["loop_seconds"] >= 0.5
    tests = recording["starting_tests"]["seconds"] + recording["final_tests"]["seconds"]
    assert outcome(recording).seconds - tests >= 0.5


@SHARES_THE_CUT_OFF_TURN
def test_a_turn_cut_off_mid_stream_shows_its_model_time_in_the_timeline(cut_off):
    # The stop carries the time of the turn it cut off; the timeline and the attempt's
    # seconds both count it (once the timeline said "model 0.00s" for it).
    finished, output = cut_off
    stop = load(output)["stop"]
    assert stop["reason"] == "incomplete_model_turn" and stop["seconds"] >= 0.5
    line = next(x for x in finished.stdout.splitlines() if x.startswith("turn 1  model"))
    assert "(model turn cut off: incomplete_model_turn)" in line
    total = next(x for x in finished.stdout.splitlines() if x.startswith("total   model "))
    assert float(total.split()[2].removesuffix("s")) >= 0.5
    assert float(total.split()[2].removesuffix("s")) == pytest.approx(stop["seconds"], abs=0.01)


@pytest.fixture(scope="module")
def by_max_turns(tmp_path_factory):
    """(the two runs, the series, their folder) that compare.py groups by max_turns: two
    attempts stopped by --max-turns 1, each a run of its own (t1-1.json, t1-2.json), and a
    series of two with the default 12 turns (t12-1.json, t12-2.json) where both repair the
    sample, the first after reading a file (3 model calls and 2 tool calls), the second at
    once (2 and 1)."""
    folder = tmp_path_factory.mktemp("by-max-turns")
    with ConversationServer([reading("a"), reading("b")]) as server:
        small = [record("--host", server.host, "--output", folder / f"t1-{k}.json",
                        "--max-turns", 1) for k in (1, 2)]  # fmt: skip
    large = series([reading("c") + passing("d"), passing("e")], folder / "t12.json",
                   "--attempts", 2)  # fmt: skip
    return small, large, folder


@SHARES_THE_RUNS_BY_MAX_TURNS
def test_series_where_every_attempt_passes_exits_0(by_max_turns):
    _, finished, _ = by_max_turns
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "passed 2 of 2 (100%; 95% interval 34%-100%)" in finished.stdout


def test_series_refuses_up_front_when_one_target_exists(tmp_path):
    (tmp_path / "s-2.json").write_text("keep me")
    finished = record("--host", "http://127.0.0.1:9", "--attempts", 3, "--output",
                      tmp_path / "s.json")  # fmt: skip
    assert finished.returncode == 2
    assert finished.stderr == f"error: {tmp_path / 's-2.json'} exists; choose another " \
        "--output or add --force\n"  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-2.json"]
    assert (tmp_path / "s-2.json").read_text() == "keep me"


def test_one_attempt_refuses_an_existing_output_by_its_own_name(tmp_path):
    # --attempts 1 (the default) writes --output itself, not s-1.json: that is what is checked.
    (tmp_path / "s.json").write_text("keep me")
    finished = record("--host", "http://127.0.0.1:9", "--output", tmp_path / "s.json")
    assert finished.returncode == 2
    assert finished.stderr == f"error: {tmp_path / 's.json'} exists; choose another " \
        "--output or add --force\n"  # fmt: skip
    assert (tmp_path / "s.json").read_text() == "keep me"


def test_series_with_the_server_down_is_a_set_up_error_said_once(tmp_path, unused_port):
    host = f"http://127.0.0.1:{unused_port}"
    finished = record("--host", host, "--attempts", 3, "--jobs", 2, "--output", tmp_path / "s.json")
    assert finished.returncode == 2
    errors = finished.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: cannot reach Ollama"), errors
    assert "attempt 3" not in finished.stdout  # no new attempt after a set-up error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--attempts", "--jobs"])
def test_attempts_and_jobs_must_be_at_least_1(tmp_path, option):
    finished = record(option, "0", "--output", tmp_path / "s.json")
    assert finished.returncode == 2
    assert f"{option}: must be a positive whole number" in finished.stderr


def test_jobs_without_a_series_is_refused_not_ignored(tmp_path):
    finished = record("--jobs", "2", "--output", tmp_path / "s.json")
    assert finished.returncode == 2 and "Traceback" not in finished.stderr
    assert "error: --jobs runs attempts at once; give --attempts N (N > 1) with it" in (
        finished.stderr
    )
    assert list(tmp_path.iterdir()) == []


class Gate(threading.Event):
    """A stand-in gate that remembers whether it opened before the server gave up on it."""

    opened_in_time = None

    def wait(self, timeout=None):
        self.opened_in_time = super().wait(timeout)
        return self.opened_in_time


def test_jobs_2_runs_two_at_once_and_gives_the_same_verdicts(tmp_path):
    gate = Gate()  # holds attempt a's first stream until a second conversation has begun
    scripts = [passing("a", gate=gate), failing("b"), passing("c")]
    with ConversationServer(scripts) as server:
        opener = threading.Thread(target=open_when_started, args=(server, 2, gate))
        opener.start()
        output = tmp_path / "s.json"
        finished = record("--host", server.host, "--output", output, "--attempts", 3, "--jobs", 2)
        opener.join()
    assert gate.opened_in_time is True  # the second attempt began while the first waited
    assert finished.returncode == 1, finished.stdout + finished.stderr
    paths = sorted(tmp_path.glob("s-*.json"))
    assert sorted(passed(load(p)) for p in paths) == [False, True, True]
    assert "passed 2 of 3 (67%; 95% interval 21%-94%)" in finished.stdout
    lines = attempt_lines(finished.stdout)  # whole lines, none cut into by another
    assert len(lines) == 3 and all(
        re.fullmatch(r"\[\d/3\] attempt \d: \w+ · .* s.*", x) for x in lines
    )
    out = open(os.devnull, "w")
    assert all(replay_one(p, out=out) == REPRODUCED for p in paths)  # no crossed replies


def open_when_started(server, conversations, gate, seconds=30):
    """Open `gate` once `conversations` conversations have begun on `server`."""
    until = time.monotonic() + seconds
    while len(server.started) < conversations and time.monotonic() < until:
        time.sleep(0.02)
    gate.set()


# --- compare.py -------------------------------------------------------------------------------


def compare(*args):
    return run_cli("compare.py", *args)


def test_compare_on_the_shipped_recordings_labels_them_scripted():
    finished = compare(*sorted(RECORDINGS.glob("*.json")))
    assert finished.returncode == 0, finished.stderr
    out = finished.stdout
    assert "scripted · gemma4:e2b · ollama · max_turns 1  (1 recording)" in out
    assert "scripted · gemma4:e2b · ollama · max_turns 12  (3 recordings)" in out
    assert out.count(NOT_A_MODEL) == 2  # the scripted groups say so; the live one does not
    assert "live · smollm2-135m-instruct · openai · max_turns 12  (1 recording)" in out
    # repair passes; the claim fails; games-the-verdict exits 0, and its verdict says failed
    assert "passed 1 of 3 (33%; 95% interval 6%-79%)" in out
    assert "median tokens: prompt n/a · generated n/a" in out  # scripted: no counters
    assert all(len(line) <= 80 for line in out.splitlines())


def test_compare_never_puts_two_turn_budgets_in_one_group_without_saying_so():
    # by model, the shipped scripted runs of 1 and of 12 turns share a group: said under it
    scripted = [p for p in sorted(RECORDINGS.glob("*.json")) if "live" not in p.name]
    finished = compare("--by", "model", *scripted)
    group = finished.stdout.split("\n\n")[1].splitlines()
    assert group[0] == "scripted · gemma4:e2b  (4 recordings)"
    said = "turn budgets differ here: max_turns 1 (1), 12 (3); --by max_turns parts them"
    assert group[2] == f"  {said}"
    assert "turn budgets differ" not in compare(*scripted).stdout  # grouped by them: never


@SHARES_THE_RUNS_BY_MAX_TURNS
def test_compare_by_max_turns_answers_what_a_bigger_budget_repairs(by_max_turns):
    small, large, folder = by_max_turns
    codes = [run.returncode for run in (*small, large)]
    assert codes == [1, 1, 0], [run.stdout + run.stderr for run in (*small, large)]
    mine = sorted(folder.glob("*.json"))
    assert [p.name for p in mine] == ["t1-1.json", "t1-2.json", "t12-1.json", "t12-2.json"]
    scripted = [
        p for p in sorted(RECORDINGS.glob("*.json")) if '"source": "scripted"' in p.read_text()
    ]
    finished = compare("--by", "max_turns", *mine, *scripted)
    assert finished.returncode == 0, finished.stderr
    groups = finished.stdout.split("\n\n")[1:]
    assert [g.splitlines()[0] for g in groups] == [
        "live · max_turns 1  (2 recordings)",
        "live · max_turns 12  (2 recordings)",
        "scripted · max_turns 1  (1 recording)",
        "scripted · max_turns 12  (3 recordings)",
    ]
    assert "passed 0 of 2 (0%; 95% interval 0%-66%)" in groups[0]
    assert "stops: max_turns 2" in groups[0]
    assert "passed 2 of 2 (100%; 95% interval 34%-100%)" in groups[1]
    assert "medians: model calls 2.5 · tool calls 1.5" in groups[1]  # 3+2 and 2+1 calls
    assert NOT_A_MODEL not in groups[0] + groups[1] and NOT_A_MODEL in groups[2]


def test_compare_bad_files_get_one_error_line_each_and_exit_2(tmp_path):
    (tmp_path / "bad.json").write_text("{}")
    (tmp_path / "text.json").write_text("not json")
    finished = compare(tmp_path / "bad.json", RECORDINGS / "repair.json", tmp_path / "text.json")
    assert finished.returncode == 2
    errors = finished.stderr.splitlines()
    assert len(errors) == 2 and all(line.startswith("error: ") for line in errors)
    assert "bad.json: field 'format'" in errors[0] and "text.json: not a JSON" in errors[1]
    assert "passed 1 of 1" in finished.stdout  # the good one is still compared
    assert "Traceback" not in finished.stderr


def test_compare_a_model_name_that_is_not_text_is_one_error_line_of_at_most_300(tmp_path):
    # load() keeps the model's name as any JSON, and compare.py groups and sorts by it: such
    # a recording is one error line, cut at 300 characters however long its path, exit 2;
    # the others are still compared
    def change(recording):
        recording["model"]["name"] = ["gemma4"]

    short, long = (altered(tmp_path, change, name) for name in ("list.json", "x" * 200 + ".json"))
    finished = compare(short, RECORDINGS / "repair.json", long)
    assert finished.returncode == 2
    errors = finished.stderr.splitlines()
    assert len(errors) == 2, finished.stderr
    assert errors[0] == (
        f"error: {short}: cannot be compared (TypeError: the model's name is a list, not text)"
    )
    assert errors[1].startswith(f"error: {long}: cannot be") and len(errors[1]) == 300
    assert "passed 1 of 1" in finished.stdout


def test_rate_bar_marks_the_rate_inside_its_interval():
    bar = rate_bar(2, 3, wilson_interval(2, 3))  # 67% in 21%-94%
    cells = bar.split("|")[1]
    assert len(bar) == 62 and len(cells) == 50
    assert cells.index("#") == 33  # 2/3 of 50 cells
    assert cells[:10] == "." * 10 and cells[10:33] == "-" * 23 and cells[34:47] == "-" * 13
    assert cells[47:] == "..."
    assert rate_bar(0, 4, wilson_interval(0, 4)).split("|")[1][0] == "#"
    assert rate_bar(4, 4, wilson_interval(4, 4)).split("|")[1][-1] == "#"


# --- conversation growth against the context window -------------------------------------------


def done_events(*prompt_tokens):
    return [
        {"type": "model_done", "turn": turn, "model_counters": {"prompt_eval_count": tokens}}
        for turn, tokens in enumerate(prompt_tokens, 1)
    ]


def test_context_lines_warn_only_within_10_percent_of_the_window():
    # 90% of 8192 is 7372.8: 7372 stays quiet, 7373 warns
    quiet = context_lines(done_events(1200, 7372), (8192, "num_ctx"))
    assert [line.split()[:2] for line in quiet[1:]] == [["turn", "1"], ["turn", "2"]]
    assert not any(line.startswith("warning") for line in quiet)
    loud = context_lines(done_events(1200, 7373, 8192), (8192, "num_ctx"))
    assert loud[-1] == (
        "warning: turns 2, 3 at up to 100% of num_ctx: oldest messages may be silently dropped"
    )
    assert context_lines(done_events(9000), None) == []  # no window known: nothing to say
    assert context_lines([{"type": "model_done", "turn": 1}], (8192, "num_ctx")) == []


def test_context_window_comes_from_num_ctx_or_a_server_that_says_it():
    assert context_window({"options": {"num_ctx": 8192}}) == (8192, "num_ctx")
    openai = {"api": "openai", "options": {"max_tokens": 2048}, "server_model": {"id": "m"}}
    assert context_window(openai) is None  # llama-server, LM Studio: not told, so no lines
    openai["server_model"]["max_model_len"] = 4096  # vLLM lists it
    assert context_window(openai) == (4096, "max_model_len")


def test_a_request_near_num_ctx_is_warned_about_in_the_recorder_and_the_replay(tmp_path):
    near = [
        reply(chunk(tool_calls=[call("read_file", path="path_rules.py")]), chunk(done=True)),
        reply(chunk("Done reading."), chunk(done=True, prompt_eval_count=7500)),
    ]
    output = tmp_path / "near.json"
    with ConversationServer([near]) as server:
        finished = record("--host", server.host, "--output", output)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    warning = "warning: turn 2 at 92% of num_ctx: oldest messages may be silently dropped"
    assert "Context (prompt tokens of each request; num_ctx 8,192):" in finished.stdout
    assert warning in finished.stdout
    with open(tmp_path / "replay.txt", "w") as out:
        assert replay_one(output, out=out) == REPRODUCED
    assert warning in (tmp_path / "replay.txt").read_text()


def test_openai_wire_asks_for_usage_and_keeps_it_as_the_counters(tmp_path):
    usage = {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333}
    script = [openai.reply(openai.content("Nothing to do."), openai.finish(usage=usage))]
    output = tmp_path / "openai.json"
    with openai.OpenAITestServer(script) as server:
        options = ["--api", "openai", "--host", server.base_url, "--model", openai.TEST_MODEL]
        finished = record(*options, "--output", output)
        body = server.chat_bodies()[0]
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert body["stream_options"] == {"include_usage": True}
    [done] = [e for e in load(output)["events"] if e["type"] == "model_done"]
    assert done["model_counters"] == {"prompt_eval_count": 321, "eval_count": 12}
    assert "Context (" not in finished.stdout  # the server did not say its window
    compared = compare(output)
    assert "median tokens: prompt 321 · generated 12" in compared.stdout


# --- tokens are counted for every model call, a cut one too ---------------------------------


def test_a_turn_cut_by_its_token_budget_counts_the_tokens_the_server_reported():
    # The shipped real attempt is one turn cut at max_tokens: no model_done event, but
    # the server's usage report came, and those tokens were spent.
    recording = load(RECORDINGS / "smollm2-135m-live.json")
    usage = next(e["usage"] for e in recording["model_calls"][0]["events"] if e.get("usage"))
    cost = outcome(recording)
    assert (cost.prompt_tokens, cost.generated_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )


def test_ollama_counters_are_summed_over_every_call_including_one_cut_at_length():
    recording = load(RECORDINGS / "repair.json")
    for number, saved in enumerate(recording["model_calls"], 1):
        saved["chunks"][-1].update(prompt_eval_count=100 * number, eval_count=number)
    saved["chunks"][-1]["done_reason"] = "length"  # the last turn was cut
    assert (outcome(recording).prompt_tokens, outcome(recording).generated_tokens) == (1500, 15)
    del recording["model_calls"][0]["chunks"][-1]["eval_count"]
    assert outcome(recording).generated_tokens is None  # never a partial sum
