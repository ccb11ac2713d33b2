"""Mutation testing for the lab: does the suite notice when a rule of the code breaks?

    python3 lab.py run tests/maintainers/mutate.py [MODULE ...] [--sample N] [--seed S]
        [--jobs N] [--tests ...]

Each mutant is one small change to one module, the kind of bug a hurried edit makes: a
flipped comparison, `x is True` read as truthiness, a guard dropped (its condition made
False, or its body made `pass`), `max` for `min`, a `.close()` call removed, the `or`
fallback dropped, a constant off by one, a returned value replaced by None. Mutants are
found by walking each module's syntax tree (`ast`) and are written back as a change of
that one span of source text, so everything else (comments, line numbers) stays put.

Every mutant runs in a COPY of the repository (the files git knows plus new untracked
ones, `.venv/` symlinked), never in the working tree: one copy per job, the mutated file
put back after each run. A mutant is *killed* when `pytest -x -q` fails, *survives* when it
passes, and *times out* past --timeout. With --tests, the named test files run first (fast
kills); a mutant that survives them is then run against the whole suite, so a survivor has
always survived the whole suite, and the score is that of a whole-suite pass.

Selection is deterministic: all mutants of the named modules, in file and source order,
then --sample N of them drawn with random.Random(--seed), listed back in that order. The
same code, arguments and seed give the same mutants and (tests being deterministic) the
same score.

Equivalent mutants (a change no test could see: `x is None` read as truthiness on a
value that is never falsy) survive whatever the suite does. mutate.py cannot tell them
apart; a maintainer can. tests/maintainers/equivalent_mutants.txt lists those reviewed, each
with the reason; the summary gives the raw score and the score without the listed ones among the
survivors (the textbook mutation score: killed over mutants not equivalent), and warns of
a listed mutant that was killed (its entry is wrong). The list never changes the draw.

Not here: CI (a pass takes many minutes; a maintainer runs it by hand), and any change to
the working tree.
"""

import argparse
import ast
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
if __name__ == "__main__":  # run directly, not through lab.py: the lab is two folders up
    sys.path.insert(0, str(HERE))

from plumbing.near_misses import docstring_nodes  # noqa: E402 -- after the path above

# Every module with logic, found afresh so that a new one is never left out: the top
# folder's programs and the files of the core path, every module of plumbing/, harness/ and
# extensions/, and the suite's run memo (tests/run_memo.py), whose answers stand in for the
# lab's own runs. Left out: lab.py (set-up only), the lesson's test files, the folders'
# empty __init__.py, and the tests, test servers and scripts of tests/.
MODULES = [
    *sorted(
        path.name
        for path in HERE.glob("*.py")
        if path.name != "lab.py"
        and not path.name.startswith("test_")
        and path.name != "conftest.py"
    ),
    *sorted(
        path.relative_to(HERE).as_posix()
        for folder in ("extensions", "harness", "plumbing")
        for path in (HERE / folder).glob("*.py")
        if path.read_text(encoding="utf-8").strip()
    ),
    "tests/run_memo.py",
]
SEED = 15
TIMEOUT = 600.0  # seconds for one run of the suite; a loop made endless is a timeout
# The whole suite, less the check of the equivalents list: that test reads the source a
# mutant changed, so it fails for every mutant of a listed line (four reviewed equivalents
# were "killed" by it in one pass).
WHOLE_SUITE = ["--ignore=tests/test_equivalent_mutants.py"]
SKIP_MARK = "no mutate"  # a line whose comment says this is never mutated
EQUIVALENTS = HERE / "tests" / "maintainers" / "equivalent_mutants.txt"

FLIP = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
# The boundary shifts a `<` for a `<=` and back: the off-by-one bugs.
BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
SWAP_CALL = {"max": "min", "min": "max", "any": "all", "all": "any"}
SWAP_BINOP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv}


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the repository
    line: int
    col: int
    end_line: int
    end_col: int
    replacement: str  # source text that replaces the span
    what: str  # one line for a reader: "`a < b` -> `a >= b`"
    on: str = ""  # the source line it changes, stripped (what an equivalents entry names)

    def apply(self, source):
        lines = source.splitlines(keepends=True)
        start = sum(len(x) for x in lines[: self.line - 1]) + byte_col(lines, self.line, self.col)
        end = sum(len(x) for x in lines[: self.end_line - 1]) + byte_col(
            lines, self.end_line, self.end_col
        )
        return source[:start] + self.replacement + source[end:]


@dataclass(frozen=True)
class Equivalent:
    """One reviewed entry of the equivalents list: a mutant no test could tell apart."""

    path: str
    what: str
    on: str  # the source line the mutant changes, stripped: an entry is tied to that code
    why: str
    at: int  # the entry's line in the list, for messages
    lines: int = 1  # how many mutants it names: lines reading the same, each equivalent

    def covers(self, mutant):
        # The line number is left out: it moves with every edit above the line.
        return (self.path, self.what, self.on) == (mutant.path, mutant.what, mutant.on)


def read_equivalents(text):
    """The entries of an equivalents list; ValueError naming the line of a malformed one.

    An entry is the mutant as a pass prints it (`path:line what`), then an indented `on:`
    line (the source line) and an indented `why:` (it may go on over more indented lines).
    An optional `lines: N` before `why:` says the module has N lines reading the same, and
    the entry names the mutant of each (the why must hold for all N). Lines starting with
    # are comments; blank lines end an entry.
    """
    entries, current = [], None

    def close():
        if current is not None:
            if not current["on"] or not current["why"]:
                raise ValueError(f"line {current['at']}: an entry needs `on:` and `why:`")
            entries.append(Equivalent(**current))

    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            close()
            current = None
        elif not line[0].isspace():
            close()
            place, _, what = line.partition(" ")
            path, _, row = place.rpartition(":")
            if not (path and row.isdigit() and what):
                raise ValueError(f"line {number}: expected `path:line what`, got {line!r}")
            current = {"path": path, "what": what, "on": "", "why": "", "at": number, "lines": 1}
        elif current is None:
            raise ValueError(f"line {number}: an indented line outside an entry")
        else:
            key, _, value = line.strip().partition(":")
            if key == "on" and not current["on"]:
                current["on"] = value.strip()
            elif key == "lines" and not current["why"] and value.strip().isdigit():
                current["lines"] = int(value)
            elif key == "why" and not current["why"]:
                current["why"] = value.strip()
            elif current["why"]:
                current["why"] += " " + line.strip()
            else:
                raise ValueError(f"line {number}: expected `on:`, `lines:` or `why:`, got {line!r}")
    close()
    return entries


def summary(mutants, results, equivalents):
    """The lines that end a pass, and its score without the reviewed equivalents."""
    killed, timeouts = results.count("killed"), results.count("timeout")
    pairs = zip(mutants, results, strict=True)
    runs = [(m, r, any(e.covers(m) for e in equivalents)) for m, r in pairs]
    survivors = [(m, listed) for m, r, listed in runs if r == "SURVIVED"]
    wrong = [(m, r) for m, r, listed in runs if listed and r != "SURVIVED"]
    listed = sum(listed for _, listed in survivors)
    raw = 100.0 * (killed + timeouts) / len(mutants) if mutants else 100.0
    lines = [
        f"{killed} killed, {len(survivors)} survived, {timeouts} timed out; "
        f"score {raw:.0f}% (killed or timed out)"
    ]
    counted = len(mutants) - listed
    score = 100.0 * (killed + timeouts) / counted if counted else 100.0
    if listed:
        lines.append(
            f"{listed} of the survivors are reviewed equivalents ({EQUIVALENTS.name}); "
            f"without them: {killed + timeouts} of {counted}, score {score:.0f}%"
        )
    for m, is_listed in survivors:
        mark = " (reviewed equivalent)" if is_listed else ""
        lines.append(f"  survived: {m.path}:{m.line} {m.what}{mark}")
    for m, r in wrong:
        lines.append(
            f"  warning: {r}, yet listed as equivalent (fix its entry): {m.path}:{m.line} {m.what}"
        )
    return lines, score


def byte_col(lines, line, col):
    """ast gives UTF-8 byte offsets; the str index of that column on that line."""
    return len(lines[line - 1].encode()[:col].decode(errors="ignore"))


def short(text, width=60):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def main_guard_lines(tree):
    """Lines of `if __name__ == "__main__":` blocks: the script entry, run by no test."""
    lines = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


# A line with its end, split as `ast` splits source: at \r\n, \r and \n only.
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def segment(lines, node):
    """`ast.get_source_segment(source, node)` from the source's `lines` (LINE), split once:
    that function splits the whole source again at each call (95% of this file's time)."""
    first, last = node.lineno - 1, node.end_lineno - 1
    start, end = node.col_offset, node.end_col_offset  # UTF-8 byte offsets
    if first == last:
        return lines[first].encode()[start:end].decode()
    middle = lines[first + 1 : last]
    return "".join(
        [lines[first].encode()[start:].decode(), *middle, lines[last].encode()[:end].decode()]
    )


def mutants_of(path):
    """Every single-point mutant of one module, in source order."""
    source = (HERE / path).read_text()
    tree = ast.parse(source)
    text_lines = source.splitlines()
    skip = main_guard_lines(tree) | {
        n for n, line in enumerate(text_lines, 1) if SKIP_MARK in line.partition("#")[2]
    }
    docstrings = docstring_nodes(tree)
    found = []

    def add(node, replacement, what, end=None):
        end = end or node
        if node.lineno in skip:
            return
        found.append(
            Mutant(
                path,
                node.lineno,
                node.col_offset,
                end.end_lineno,
                end.end_col_offset,
                replacement,
                what,
                text_lines[node.lineno - 1].strip(),
            )
        )

    source_lines = LINE.findall(source)

    def swap(node, changed, label=None):
        before = segment(source_lines, node)
        after = ast.unparse(changed)
        add(node, after, label or f"`{short(before)}` -> `{short(after)}`")

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op, right = node.ops[0], node.comparators[0]
            if isinstance(right, ast.Constant) and right.value is True and isinstance(op, ast.Is):
                swap(node, node.left, f"`{short(ast.unparse(node))}` -> truthiness")
                continue
            if isinstance(right, ast.Constant) and right.value is None:
                test = node.left if isinstance(op, ast.IsNot) else ast.UnaryOp(ast.Not(), node.left)
                swap(node, test, f"`{short(ast.unparse(node))}` -> truthiness")
            for table in (FLIP, BOUNDARY):
                if type(op) in table:
                    swap(node, ast.Compare(node.left, [table[type(op)]()], node.comparators))
        elif isinstance(node, ast.If):
            add(node.test, "False", f"guard dropped: `if {short(ast.unparse(node.test))}` never")
            if not (len(node.body) == 1 and isinstance(node.body[0], ast.Pass)):
                add(
                    node.body[0],
                    "pass",
                    f"body of `if {short(ast.unparse(node.test))}` -> pass",
                    end=node.body[-1],
                )
        elif isinstance(node, ast.While) and not (
            isinstance(node.test, ast.Constant) and node.test.value is True
        ):
            add(node.test, "False", f"loop dropped: `while {short(ast.unparse(node.test))}` never")
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            kind = "or" if isinstance(node.op, ast.Or) else "and"
            left, right = node.values
            if kind == "or":
                swap(node, left, f"`or` fallback dropped: `{short(ast.unparse(node))}`")
            else:
                swap(node, ast.BoolOp(ast.Or(), node.values))
                swap(node, right, f"`and` guard dropped: `{short(ast.unparse(node))}`")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            swap(node, node.operand)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in SWAP_CALL:
                swap(node.func, ast.Name(SWAP_CALL[node.func.id]))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr in ("close", "kill", "terminate"):
                add(node, "pass", f"`{short(ast.unparse(node))}` removed")
        elif isinstance(node, ast.BinOp) and type(node.op) in SWAP_BINOP:
            # A string, list or dict operand: the mutant is a TypeError, not a plausible bug.
            literal = (ast.Constant, ast.List, ast.Dict, ast.JoinedStr, ast.Tuple)
            if not isinstance(node.left, literal) and not isinstance(node.right, literal[1:]):
                swap(node, ast.BinOp(node.left, SWAP_BINOP[type(node.op)](), node.right))
        elif isinstance(node, ast.Constant) and id(node) not in docstrings:
            value = node.value
            if isinstance(value, bool):
                swap(node, ast.Constant(not value))
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                swap(node, ast.Constant(value + 1))
        elif isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                add(node, "return None", f"`{short(ast.unparse(node))}` -> `return None`")
    return sorted(found, key=lambda m: (m.line, m.col, m.what))


def tracked_files():
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=HERE,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (HERE / name).is_file()]


def make_copy(root):
    for name in tracked_files():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(HERE / name, target)
    (root / ".venv").symlink_to(HERE / ".venv")


def pytest_run(root, tests, timeout, log):
    """'passed', 'failed' or 'timeout', and the seconds it took; pytest's output goes to the
    file `log` (to say why a run failed: which test, or the end of the output)."""
    # subtle: the copy's own .venv (a link to this one's): its interpreters then start the
    # copy's plumbing/fresh_sources.py, mutants included, as the start-up file names it
    python = Path(root) / ".venv" / "bin" / "python"
    command = [str(python), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    # subtle: a mutant written back within the same second and with the same size as the
    # original would let Python run the stale bytecode; write none.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.monotonic()
    with (
        open(log, "wb") as output,
        subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        ) as child,
    ):
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, 9)  # the suite's own children go too
            child.wait()
            return "timeout", time.monotonic() - started
    return ("passed" if code == 0 else "failed"), time.monotonic() - started


def failed_test(output):
    """The first test pytest's output names as failed ("FAILED path::name"), or "?"."""
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 2)[1]
    return "?"


def parse_tests(items):
    """--tests items: `MODULE=test_a.py,test_b.py` for one module, `test_a.py` for all."""
    per_module, everywhere = {}, []
    for item in items:
        module, sep, files = item.rpartition("=")
        names = [f for f in files.split(",") if f]
        if sep:
            per_module.setdefault(module, []).extend(names)
        else:
            everywhere.extend(names)
    return per_module, everywhere


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python3 lab.py run tests/maintainers/mutate.py",
        description="Run single-point mutants of the lab's modules against its test suite, "
        "each in a temporary copy of the repository, and report killed/survived/timeout.",
        epilog="exit codes: 0 the pass ran (whatever the score); 1 a --min-score was missed; "
        "2 bad arguments or the unmutated suite fails in the copy.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "modules", nargs="*", metavar="MODULE", default=MODULES, help="modules to mutate"
    )
    parser.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="run N mutants drawn with --seed (default: all of them)",
        default=argparse.SUPPRESS,
    )
    parser.add_argument("--seed", type=int, default=SEED, help="seed of the --sample draw")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="mutants run at once")
    parser.add_argument(
        "--tests",
        nargs="+",
        default=[],
        metavar="[MODULE=]FILE[,FILE]",
        help="test files to run first (for one module, or all); survivors are "
        "then confirmed against the whole suite. Give MODULEs before --tests",
    )
    parser.add_argument(
        "--no-confirm",
        action="store_true",
        help="count a survivor of --tests as survived without the whole suite "
        "(a quick, pessimistic pass)",
    )
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds for one suite run")
    parser.add_argument(
        "--match",
        action="append",
        default=argparse.SUPPRESS,
        metavar="TEXT",
        help="only mutants whose `path:line description` contains TEXT (repeatable: any of "
        "them; applied before --sample; default: no filter)",
    )
    parser.add_argument(
        "--part",
        metavar="I/N",
        default="1/1",
        help="run only the I-th of N equal slices of the selection (to split one pass "
        "over several processes or machines; the score of a pass adds up its parts)",
    )
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        metavar="K",
        help="leave out the first K mutants of the selection (after --part), to resume a pass "
        "that was stopped: its log's lines say which ran (default: 0)",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants and run nothing")
    parser.add_argument(
        "--min-score",
        type=float,
        default=0.0,
        metavar="PERCENT",
        help="exit 1 below this score (the one without the reviewed equivalents)",
    )
    parser.add_argument(
        "--equivalents",
        type=Path,
        default=EQUIVALENTS,
        metavar="FILE",
        help="the reviewed list of equivalent mutants (see the module's docstring)",
    )
    return parser.parse_args(argv)


def part_of(mutants, part):
    """The I-th of N contiguous slices of `mutants` for `part` = "I/N"."""
    index, count = (int(x) for x in part.split("/"))
    if not 1 <= index <= count:
        raise ValueError(part)
    size = -(-len(mutants) // count)  # rounded up: the last slice may be shorter
    return mutants[(index - 1) * size : index * size]


def select(args):
    everything = [m for path in args.modules for m in mutants_of(path)]
    match = getattr(args, "match", [])
    if match:
        everything = [
            m for m in everything if any(t in f"{m.path}:{m.line} {m.what}" for t in match)
        ]
    sample = getattr(args, "sample", None)
    if sample is None or sample >= len(everything):
        return everything, len(everything)
    chosen = sorted(random.Random(args.seed).sample(range(len(everything)), sample))
    return [everything[i] for i in chosen], len(everything)


def run_all(mutants, args):
    per_module, everywhere = parse_tests(args.tests)
    workdir = Path(tempfile.mkdtemp(prefix="lab-mutate-"))
    # subtle: mkdtemp's folder is root's alone; the tests that start a program as nobody
    # (tests/test_model_files.py) must reach the copy as they reach the lab's own folder
    workdir.chmod(0o755)
    copies = []
    try:
        for n in range(max(1, args.jobs)):
            copies.append(workdir / f"copy{n}")
            make_copy(copies[-1])
        # The files a pass runs must pass unmutated, or every mutant would look killed.
        if args.no_confirm:
            base_tests = sorted({f for fs in per_module.values() for f in fs} | set(everywhere))
        else:
            base_tests = WHOLE_SUITE
        log = workdir / "unmutated.txt"
        baseline, seconds = pytest_run(copies[0], base_tests, args.timeout, log)
        if baseline != "passed":
            tail = log.read_text(errors="replace").splitlines()[-30:]
            print(f"error: the unmutated suite does not pass in {copies[0]}; the end of its "
                  "output:", *tail, sep="\n", file=sys.stderr)  # fmt: skip
            return None
        print(f"unmutated suite: passed in {seconds:.0f} s", flush=True)
        free, lock, results = list(copies), threading.Lock(), {}

        def one(index, mutant):
            with lock:
                root = free.pop()
            target = root / mutant.path
            original, how = target.read_text(), ""
            try:
                target.write_text(mutant.apply(original))
                first = per_module.get(mutant.path, []) + everywhere
                log = workdir / f"mutant{index}.txt"
                outcome, took = pytest_run(root, first or WHOLE_SUITE, args.timeout, log)
                if outcome == "passed" and first and not args.no_confirm:
                    outcome, more = pytest_run(root, WHOLE_SUITE, args.timeout, log)
                    took += more
                    if outcome == "failed":  # say which test, to judge a kill seen only here
                        how = (
                            f" (by the whole suite: {failed_test(log.read_text(errors='replace'))})"
                        )
            finally:
                target.write_text(original)
                with lock:
                    free.append(root)
            verdict = {"failed": "killed", "passed": "SURVIVED", "timeout": "timeout"}[outcome]
            with lock:
                results[index] = verdict
                print(
                    f"[{len(results)}/{len(mutants)}] {verdict:8} {took:4.0f}s "
                    f"{mutant.path}:{mutant.line} {mutant.what}{how}",
                    flush=True,
                )

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            list(pool.map(lambda pair: one(*pair), enumerate(mutants)))
        return [results[i] for i in range(len(mutants))]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv):
    args = parse_args(argv)
    for path in args.modules:
        if not (HERE / path).is_file():
            print(f"error: no module {path} in {HERE}", file=sys.stderr)
            return 2
    try:
        equivalents = read_equivalents(args.equivalents.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"error: {args.equivalents}: {error}", file=sys.stderr)
        return 2
    mutants, total = select(args)
    try:
        mutants = part_of(mutants, args.part)
    except ValueError:
        print(f"error: --part must be I/N with 1 <= I <= N, got {args.part!r}", file=sys.stderr)
        return 2
    if args.skip < 0:
        print(f"error: --skip must be 0 or more, got {args.skip}", file=sys.stderr)
        return 2
    mutants = mutants[args.skip :]
    drawn = (
        f"{len(mutants)} of {total} mutants (seed {args.seed}, part {args.part}"
        + (f", skipping {args.skip})" if args.skip else ")")
        if len(mutants) < total
        else f"all {total} mutants"
    )
    print(f"{drawn} of {', '.join(args.modules)}", flush=True)
    if args.list:
        for m in mutants:
            print(f"{m.path}:{m.line} {m.what}")
        return 0
    results = run_all(mutants, args)
    if results is None:
        return 2
    lines, score = summary(mutants, results, equivalents)
    print(f"\n{drawn}: " + "\n".join(lines))
    return 1 if score < args.min_score else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:  # `--list | head`: the reader has all it wanted
        sys.exit(0)
