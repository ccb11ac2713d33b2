"""Benchmark: what the harness costs next to the work it cannot avoid, as ratios from one run.

    python3 lab.py run tests/maintainers/bench.py            (add --quick for fewer repeats)

Each comparison runs both sides interleaved (A, B, A, B, ...) so that both see the same
machine, with the garbage collector paused during each run (as `timeit` does), and
reports min / median / max over the repeats; the ratio uses the minimums (the least
disturbed runs). Targets are printed beside the figures:
- assembly: `agent_events` over 10^4, 10^5, 10^6 scripted chunks vs a bare loop that only
  reads each chunk's content from the same scripted stream and yields one event per piece
  (≤ 3× at 10^6; growth from 10^5 to 10^6 ≤ 12×, i.e. linear);
- wire: `LocalModel` + `agent_events` consuming a 20,000-chunk stream from the local
  Ollama-protocol server vs the raw SDK iterating the same stream (≤ 1.25×), and the extra
  delay to the first `text_delta` after the server flushed its first line (≤ 5 ms);
- replay: `replay.py recordings/repair.json` vs the bare pytest runs it must make (the
  `run_tests` call and the final independent run), with the same minimal environment
  (≤ 1.3×);
- held-out checks (`--held-out` runs only this): the one child process they add to each
  verdict, isolated as by default (target: under 0.5 s);
- the whole test suite's wall time and CPU seconds, once (tests/maintainers/suite_cost.py);
- search (`--search` runs only this): the time of one `search` call on hostile input with
  the shipped budget (a backtracking pattern, a 50 MB pattern, 200,000 binary files), and
  what an ordinary search costs in its child process next to the same search run in-process;
- wire caps (`--caps` runs only these): on each wire, a client process (so that its peak
  memory is its own) against a hostile stand-in server: a 40 MB line (peak RSS vs an
  ordinary turn; the cap is 8 MB), and a stall, a trickle and keep-alive comments under
  `--deadline 1 --timeout 30` (how long until the run stops, and why).

Not a test: timings on a shared machine are noisy, so nothing here passes or fails CI.
"""

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__":  # run directly, not through lab.py: the lab is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.run_directly import need_lab_packages

    need_lab_packages(__file__)

import ollama

from agent_loop import TASK, TEXT_DELTA, agent_events, conversation_start
from harness.old_recordings import held_out_asked
from harness.recording import load
from local_model import OPTIONS, LocalModel
from plumbing.child_process import minimal_env
from plumbing.held_out import held_out_checks
from plumbing.isolation import isolation_kind, isolation_prefix
from plumbing.pytest_run import PYTEST_COMMAND
from plumbing.sample import copy_sample
from readonly_tools import SEARCH_GRACE, SEARCH_SECONDS, ReadOnlyTools, _search
from repo_tools import RepoTools
from tests.maintainers.suite_cost import cost_line, run_suite
from tests.ollama_test_server import OllamaTestServer, chunk, reply
from tests.openai_test_server import OpenAITestServer, content, finish
from tests.openai_test_server import reply as openai_reply
from tests.scripted_model import ScriptedChat
from verdict import independent_verdict

HERE = Path(__file__).resolve().parents[2]


def interleaved(a, b, repeats):
    """Run a() and b() alternately; return their lists of durations in seconds."""
    times_a, times_b = [], []
    for _ in range(repeats):
        for run, times in ((a, times_a), (b, times_b)):
            gc.collect()
            gc.disable()  # as timeit does: a collection landing in one run is noise
            try:
                started = time.perf_counter()
                run()
                times.append(time.perf_counter() - started)
            finally:
                gc.enable()
    return times_a, times_b


def spread(times, unit=1.0):
    return "/".join(f"{t * unit:.3g}" for t in (min(times), statistics.median(times), max(times)))


def row(name, harness, bare, target):
    """One comparison: the ratio of the minimums is judged; the median of the ratios of
    neighbouring runs is shown beside it, as a check on how noisy the machine was."""
    ratio = min(harness) / min(bare)
    paired = statistics.median(h / b for h, b in zip(harness, bare, strict=True))
    verdict = "ok" if ratio <= target else "OVER"
    print(
        f"{name:<20} {spread(harness):>22} {spread(bare):>22}  {ratio:5.2f}x "
        f"(pairs {paired:.2f}x)  target <= {target}x  {verdict}"
    )
    return ratio


def bare_loop(chunks):
    """The least any streaming loop must do: read each content piece, yield an event."""
    for item in chunks:
        text = item["message"]["content"]
        if text:
            yield {"type": TEXT_DELTA, "text": text}


def assembly(repeats, root):
    print("\nassembly: agent_events vs a bare loop over the same scripted chunks")
    tools, best = RepoTools(root), {}
    for size in (10_000, 100_000, 1_000_000):
        stream = [chunk("x") for _ in range(size - 1)] + [chunk("y", done=True)]
        # subtle: a 10^4-chunk run takes milliseconds, where one disturbance decides the
        # minimum; each measurement repeats it until it covers 10^5 chunks.
        inner = max(1, 100_000 // size)

        def harness(stream=stream, inner=inner):
            for _ in range(inner):
                for _ in agent_events(ScriptedChat([stream]), tools, TASK):
                    pass

        def bare(stream=stream, inner=inner):
            for _ in range(inner):
                # the same scripted source as the harness reads, so only the loops differ
                for _ in bare_loop(ScriptedChat([stream])([], [])):
                    pass

        harness_times, bare_times = interleaved(harness, bare, repeats)
        harness_times = [t / inner for t in harness_times]
        bare_times = [t / inner for t in bare_times]
        best[size] = min(harness_times)
        row(f"  {size:>9,} chunks", harness_times, bare_times, 3.0)
    growth = best[1_000_000] / best[100_000]
    verdict = "ok" if growth <= 12 else "OVER"
    print(f"  growth 10^5 -> 10^6: {growth:.1f}x  target <= 12x (linear is 10x)  {verdict}")


def wire(repeats):
    print("\nwire: LocalModel + agent_events vs the raw SDK, 20,000 chunks over loopback HTTP")
    size = 20_000
    lines = [chunk("x") for _ in range(size - 1)] + [chunk("y", done=True)]
    with OllamaTestServer([reply(*lines) for _ in range(2 * repeats)]) as server:
        client = ollama.Client(host=server.host)
        model = LocalModel(host=server.host)
        firsts = {"harness": [], "sdk": []}

        def harness():
            first = None
            for event in agent_events(model, RepoTools(HERE), TASK, max_turns=1):
                if first is None and event["type"] == TEXT_DELTA:
                    first = time.perf_counter()
            firsts["harness"].append(first - server.first_line_sent[-1])

        def sdk():
            first = None
            # the very request LocalModel makes, so only the harness around it differs
            stream = client.chat(
                model="gemma4:e2b",
                messages=conversation_start(TASK),
                tools=RepoTools.schemas,
                stream=True,
                think=model.think,  # None, as no describe() ran: left out of both requests
                keep_alive=0,
                options=OPTIONS,
            )
            for _ in stream:
                first = first or time.perf_counter()
            firsts["sdk"].append(first - server.first_line_sent[-1])

        harness_times, sdk_times = interleaved(harness, sdk, repeats)
    row(f"  {size:,} chunks", harness_times, sdk_times, 1.25)
    extra = (min(firsts["harness"]) - min(firsts["sdk"])) * 1000
    print(
        f"  first line -> first text_delta {spread(firsts['harness'], 1000)} ms, "
        f"-> SDK's first chunk {spread(firsts['sdk'], 1000)} ms (min/median/max); "
        f"extra {extra:.2f} ms  target <= 5 ms  {'ok' if extra <= 5 else 'OVER'}"
    )
    if extra < 0:
        print("  (a negative extra is noise between the two sides: the harness adds no time)")


def replay_cost(repeats):
    print("\nreplay: replay.py recordings/repair.json vs the 2 bare pytest runs it must make")
    recording = HERE / "recordings" / "repair.json"

    def replay():
        command = [sys.executable, str(HERE / "replay.py"), str(recording)]
        subprocess.run(command, check=True, capture_output=True, cwd=HERE)

    def bare():
        with tempfile.TemporaryDirectory() as scratch:
            root = copy_sample(scratch)
            (root / "path_rules.py").write_text(recording_source)
            # isolated as replay's runs are by default, so both sides pay for bubblewrap
            prefix = isolation_prefix(isolation_kind(), (root.resolve(),))
            for _ in range(2):  # run_tests, then the independent final run
                command = [*prefix, sys.executable, *PYTEST_COMMAND]
                env = minimal_env()
                subprocess.run(command, cwd=root, env=env, capture_output=True, check=True)
        held_out_checks(recording_source.encode(), **asked)  # the final verdict's second part

    recording_source = json.loads(recording.read_text())["final_source"]
    asked = held_out_asked(load(recording))  # the draw its format asks, as replay asks it
    replay_times, bare_times = interleaved(replay, bare, repeats)
    row("  repair.json", replay_times, bare_times, 1.3)


CLIENT = """
import sys, time
from agent_loop import TASK, agent_events
from plumbing.limits import Deadline
from repo_tools import RepoTools
api, url, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
started = time.monotonic()
deadline = Deadline(seconds)
if api == "ollama":
    from local_model import LocalModel
    chat = LocalModel(host=url, timeout=30, deadline=deadline)
else:
    from openai_model import OpenAICompatibleModel
    chat = OpenAICompatibleModel("test-model", url, timeout=30, deadline=deadline)
stop = list(agent_events(chat, RepoTools("."), TASK, deadline=deadline))[-1]
# subtle: VmHWM is this process's own peak; ru_maxrss would include the parent's pages
# that the child shared between fork and exec.
peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(int(peak) // 1024, stop["reason"], f"{time.monotonic() - started:.2f}",
      (stop.get("error") or "")[:50])
"""


def client(api, url, seconds):
    """Run one turn in a child process; return (its stop line, its peak RSS in MB)."""
    command = [sys.executable, "-c", CLIENT, api, url, str(seconds)]
    finished = subprocess.run(command, cwd=HERE, capture_output=True, text=True)
    peak, _, line = finished.stdout.strip().partition(" ")
    return line, float(peak)


def caps():
    print("\nwire caps: a client process against hostile stand-in servers (one run each)")
    huge = 40 * 1024 * 1024
    ollama_cases = {
        "ordinary turn": reply(chunk("ok"), chunk(done=True)),
        "one 40 MB line": reply(b'{"message": {"content": "' + b"x" * huge + b'"}}\n'),
        "stall after 1": reply(chunk("a"), chunk(done=True), pause_after_first=30),
        "byte every 0.2 s": reply(chunk("a"), drip=(b"x", 0.2)),
    }
    openai_cases = {
        "ordinary turn": openai_reply(content("ok"), finish()),
        "one 40 MB line": openai_reply("data: " + "x" * huge + "\n\n"),
        "stall after 1": openai_reply(content("a"), finish(), pause_after_first=30),
        "byte every 0.2 s": openai_reply(content("a"), drip=("x", 0.2)),
        "keep-alive 0.2 s": openai_reply(content("a"), drip=(": keep-alive\n\n", 0.2)),
    }
    print(f"  {'wire':<7}{'case':<18}{'peak RSS':>9}  stop reason, seconds (--deadline 1)")
    for api, cases in (("ollama", ollama_cases), ("openai", openai_cases)):
        for name, script in cases.items():
            if api == "ollama":
                with OllamaTestServer([script]) as server:
                    line, rss = client(api, server.host, 1.0)
            else:
                with OpenAITestServer([script]) as server:
                    line, rss = client(api, server.base_url, 1.0)
            print(f"  {api:<7}{name:<18}{rss:>6.0f} MB  {line}")


def suite():
    print("\ntest suite: python3 lab.py test, once (suite_cost.py also counts its execs)")
    seconds, cpu, summary = run_suite([])
    print(f"  {summary}")
    print(cost_line(seconds, cpu))


def held_out_cost(repeats):
    print(f"\nheld-out checks: the child each verdict adds, isolation {isolation_kind()!r}")
    source = json.loads((HERE / "recordings" / "repair.json").read_text())["final_source"]
    times, result = timed(lambda: held_out_checks(source.encode()), repeats)
    verdict = "ok" if min(times) < 0.5 else "OVER"
    print(f"  {'repair.json':<18} {spread(times):>22} s  target < 0.5 s  {verdict}  ({result})")
    print("the whole verdict (visible tests and held-out checks) on the same source")
    with tempfile.TemporaryDirectory() as scratch:
        repo = copy_sample(scratch, source.encode())
        times, result = timed(lambda: independent_verdict(repo), repeats)
    verdict = "ok" if min(times) < 1.0 else "OVER"
    said = result["verdict"]
    print(f"  {'repair.json':<18} {spread(times):>22} s  target < 1 s  {verdict}  ({said})")


def timed(call, repeats):
    """Durations of `repeats` calls, and the last call's result."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return times, result


def search_limits(repeats):
    print(
        f"\nsearch: one call on hostile input, budget {SEARCH_SECONDS:g} s "
        f"(+{SEARCH_GRACE:g} s before the child is killed); seconds min/median/max"
    )
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        (scratch / "line.txt").write_text("a" * 34 + "!\n")
        bins = scratch / "bins"
        bins.mkdir()
        for number in range(200_000):
            (bins / f"{number:06}.bin").write_bytes(b"\0needle")
        tools = ReadOnlyTools(scratch)
        cases = [
            ("(a+)+$ on 34 a's", {"pattern": "(a+)+$", "path": "line.txt"}, 1),
            ("a 50 MB pattern", {"pattern": "a" * 50_000_000}, repeats),
            ("200,000 binary files", {"pattern": "needle", "path": "bins"}, 1),
        ]
        for name, arguments, count in cases:
            times, result = timed(
                lambda arguments=arguments: tools.invoke("search", arguments), count
            )
            outcome = result.get("error") or result.get("note") or "finished"
            skipped = result.get("files_skipped", "0").split()[0]
            print(f"  {name:<22} {spread(times):>20}  skipped {skipped:>7}  {outcome[:60]}")
    print("  ordinary search of this folder: in its child process vs the same search in-process")
    tools = ReadOnlyTools(HERE)

    def in_process():
        counts = {"searched": 0, "skipped": 0, "deep": 0}
        stop_at = time.monotonic() + SEARCH_SECONDS
        _search(tools.tree, "def main", [], stop_at, counts, lambda item: None)

    child_times, bare_times = interleaved(
        lambda: tools.invoke("search", {"pattern": "def main"}), in_process, repeats
    )
    print(
        f"  {'child / in-process':<22} {spread(child_times):>20} {spread(bare_times):>20}  "
        f"+{(min(child_times) - min(bare_times)) * 1000:.0f} ms per search"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="exit code: 0 whenever it ran to the end; a missed target is marked OVER, "
        "not failed (a benchmark on a shared machine is not a test)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="3 repeats instead of 7 (faster, noisier)"
    )
    parser.add_argument("--no-suite", action="store_true", help="skip timing the test suite")
    parser.add_argument("--search", action="store_true", help="run only the search section")
    parser.add_argument("--caps", action="store_true", help="only the wire caps")
    parser.add_argument("--held-out", action="store_true", help="only the held-out checks")
    args = parser.parse_args(argv)
    if args.caps:
        caps()
        return
    repeats = 3 if args.quick else 7
    print(
        f"bench.py on {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {repeats} interleaved repeats per comparison"
    )
    if args.search:
        search_limits(repeats)
        return
    if args.held_out:
        held_out_cost(repeats)
        return
    print(f"{'seconds, min/median/max':<20} {'harness':>22} {'bare':>22}  ratio of minimums")
    with tempfile.TemporaryDirectory() as scratch:
        assembly(repeats, copy_sample(scratch))
    wire(repeats)
    caps()
    replay_cost(repeats)
    held_out_cost(repeats)
    search_limits(repeats)
    if not args.no_suite:
        suite()


if __name__ == "__main__":
    main()
