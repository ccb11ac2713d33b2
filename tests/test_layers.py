"""plumbing/ lies below everything a learner opens: it imports no program, not the judge
(verdict.py), no adapter (but for plumbing/live_model.py, whose job is to open one), not
extensions/, and of the loop only its event names (the event types and stop reasons of
agent_loop.py). extensions/ sits above the loop and the tools, with no arrow back: it
wraps the loop's interface and imports only plumbing/, the tools' guard (tool_guard.py)
and the loop's event names; only the programs import it. Read from the sources' imports
(ast), so a new upward arrow fails here before anyone runs it."""

import ast
from pathlib import Path

import agent_loop

LAB = Path(__file__).resolve().parent.parent
ABOVE = {path.stem for path in LAB.glob("*.py")}  # the lab's top folder: programs, lesson
ABOVE.add("extensions")  # the wrappers around the loop (extensions/), which programs turn on
EVENT_NAMES = {
    name
    for name, value in vars(agent_loop).items()
    if name in ("EVENT_TYPES", "STOP_REASONS")
    or (isinstance(value, str) and value in (*agent_loop.EVENT_TYPES, *agent_loop.STOP_REASONS))
}
OPENS_THE_ADAPTER = ("plumbing/live_model.py", {"local_model", "openai_model"})


def upward_arrows(folder=LAB / "plumbing", named="plumbing"):
    """(module, what it imports from above, the name) for each import of a top-level file
    (or of extensions/) by a module of plumbing/ (`folder`, its modules `named/x.py`),
    wherever in the module the import stands."""
    arrows = set()
    for path in sorted(folder.glob("*.py")):
        module = f"{named}/{path.name}"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found = [(alias.name, "*") for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found = [(node.module, alias.name) for alias in node.names]
            else:
                continue
            for target, name in found:
                if target.split(".")[0] in ABOVE:
                    arrows.add((module, target, name))
    return arrows


def allowed(arrow):
    module, target, name = arrow
    if target == "agent_loop" and name in EVENT_NAMES:
        return True
    return module == OPENS_THE_ADAPTER[0] and target in OPENS_THE_ADAPTER[1]


def test_plumbing_imports_nothing_above_it_but_the_loops_event_names():
    assert sorted(a for a in upward_arrows() if not allowed(a)) == []


def test_an_upward_arrow_is_found_wherever_the_import_stands(tmp_path):
    # the check itself: a late import inside a function counts as much as one at the top,
    # and of the loop only its event names pass
    (tmp_path / "late.py").write_text("def f():\n    from verdict import judge\n")
    (tmp_path / "loop.py").write_text("import agent_loop\nfrom agent_loop import STOPPED, TASK\n")
    (tmp_path / "live_model.py").write_text("from openai_model import OpenAICompatibleModel\n")
    (tmp_path / "words.py").write_text("from plumbing.verdict_words import PASSED\n")
    found = sorted(a for a in upward_arrows(tmp_path) if not allowed(a))
    assert found == [
        ("plumbing/late.py", "verdict", "judge"),
        ("plumbing/loop.py", "agent_loop", "*"),
        ("plumbing/loop.py", "agent_loop", "TASK"),
    ]


EXTENSIONS = LAB / "extensions"
EXTENSIONS_MAY_IMPORT = {"tool_guard", "extensions"}  # the tools' guard, and one another


def test_extensions_import_only_plumbing_the_tools_guard_and_the_loops_event_names():
    arrows = upward_arrows(EXTENSIONS, "extensions")
    assert any(target == "extensions.hooks" for _, target, _ in arrows)  # the check sees them
    found = sorted(
        (module, target, name)
        for module, target, name in arrows
        if target.split(".")[0] not in EXTENSIONS_MAY_IMPORT
        and not (target == "agent_loop" and name in EVENT_NAMES)
    )
    assert found == []


def test_only_programs_import_extensions():
    # the loop, the tools, the judge and plumbing/ never learn that a wrapper is there
    importers = set()
    for path in [*LAB.glob("*.py"), *(LAB / "plumbing").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            if any(name.split(".")[0] == "extensions" for name in names):
                importers.add(path.relative_to(LAB).as_posix())
    assert importers == {"record_run.py", "replay.py"}
