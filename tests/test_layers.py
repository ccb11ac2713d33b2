"""The lab stands in floors, and a module imports only from its own floor or those below:

1. `plumbing/`, the floor: limits, isolation, children of edited code, the held-out checks;
2. beside the loop: every file of the top folder that is no program (the loop, the
   adapters, the tools and the judge);
3. `harness/`: what runs the loop, records, replays and shows its runs;
4. `extensions/`: the wrappers around the loop, which programs turn on;
5. the programs: a file of the top folder with a `__main__` block;
6. the suite: tests/, the lesson's two test files and conftest.py, which nothing of the lab
   imports.

Which floor a module stands on follows from where it is and what it is, never from a list
of names, and there is no list of allowed exceptions: an arrow back up fails, wherever the
import stands (a late import inside a function counts), and so does any circle, within a
floor too, and any relative import (the floors are read from absolute names). Read from the
sources (ast), so a new upward arrow fails here before anyone runs it.
"""

import ast
from pathlib import Path

LAB = Path(__file__).resolve().parent.parent
FOLDERS = ("plumbing", "harness", "extensions")
FLOORS = ("plumbing", "beside the loop", "harness", "extensions", "the programs", "the suite")


def modules(lab=LAB):
    """{dotted module name: its file} for every module of the lab (tests/ apart)."""
    found = {}
    for path in [*lab.glob("*.py"), *(p for f in FOLDERS for p in (lab / f).rglob("*.py"))]:
        parts = path.relative_to(lab).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def floor(name, lab=LAB):
    top = name.split(".")[0]
    if top in FOLDERS:
        return FLOORS.index(top)
    if top in ("tests", "conftest") or top.startswith("test_"):
        return FLOORS.index("the suite")
    program = '__name__ == "__main__"' in (lab / f"{top}.py").read_text(encoding="utf-8")
    return FLOORS.index("the programs" if program else "beside the loop")


def imported(path):
    """The absolute names `path` imports, an import inside a function included, and whether
    it makes a relative import."""
    names, relative = set(), False
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level:
            relative = True
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names, relative


def arrows(lab=LAB):
    """{module: {modules of the lab, or of tests/, it imports}}."""
    known = modules(lab)
    graph = {}
    for name, path in known.items():
        names, _ = imported(path)
        suite = {".".join(t.split(".")[:2]) for t in names if t.split(".")[0] == "tests"}
        targets = {t for t in names if t in known and t != name} | suite
        graph[name] = targets - {t for t in targets if t in FOLDERS}  # a folder's __init__
    return graph


def upward(graph, lab=LAB):
    return sorted(
        (module, FLOORS[floor(module, lab)], target, FLOORS[floor(target, lab)])
        for module, targets in graph.items()
        for target in targets
        if floor(target, lab) > floor(module, lab)
    )


def circles(graph):
    """The circles of imports: one for each import that closes one, in a walk of the graph."""
    found, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph.get(module, ())):  # tests/' modules are no keys
            if state.get(target) == "open":
                found.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return found


def test_no_module_imports_from_a_floor_above_its_own():
    assert upward(arrows()) == []


def test_no_circle_of_imports():
    assert circles(arrows()) == []


def test_no_relative_import():
    assert [path for path in modules().values() if imported(path)[1]] == []


def test_every_floor_holds_modules_and_the_loop_stands_on_plumbing_alone():
    # the floors are not empty words: each holds modules, and the loop's imports are all
    # of plumbing/ (its chunk shapes, limits and written calls)
    graph = arrows()
    assert {FLOORS[floor(name)] for name in graph} == set(FLOORS)
    assert graph["agent_loop"] and all(t.startswith("plumbing.") for t in graph["agent_loop"])


def test_an_upward_arrow_or_a_circle_is_found_wherever_the_import_stands(tmp_path):
    # the check itself, on a lab of its own: a late import inside a function counts as
    # much as one at the top, and a circle within one floor is found
    for folder in ("plumbing", "harness", "extensions"):
        (tmp_path / folder).mkdir()
    (tmp_path / "agent_loop.py").write_text("from plumbing import limits\n")
    (tmp_path / "verdict.py").write_text("def f():\n    from harness.page import html\n")
    (tmp_path / "plumbing" / "limits.py").write_text("import plumbing.bounds\n")
    (tmp_path / "plumbing" / "bounds.py").write_text("def f():\n    import plumbing.limits\n")
    (tmp_path / "harness" / "page.py").write_text("from extensions.hooks import Hook\n")
    (tmp_path / "extensions" / "hooks.py").write_text("import agent_loop\nimport ask\n")
    program = 'if __name__ == "__main__":\n    pass\n'  # what makes a top-level file a program
    (tmp_path / "ask.py").write_text(f"import verdict\nfrom harness import page\n{program}")
    (tmp_path / "tool_guard.py").write_text("from tests.helpers import LAB\n")
    graph = arrows(tmp_path)
    assert upward(graph, tmp_path) == [
        ("extensions.hooks", "extensions", "ask", "the programs"),
        ("harness.page", "harness", "extensions.hooks", "extensions"),
        ("tool_guard", "beside the loop", "tests.helpers", "the suite"),
        ("verdict", "beside the loop", "harness.page", "harness"),
    ]
    assert circles(graph) == [
        ["plumbing.limits", "plumbing.bounds", "plumbing.limits"],
        ["ask", "harness.page", "extensions.hooks", "ask"],
    ]
    (tmp_path / "harness" / "page.py").write_text("from .console import line\n")
    assert imported(tmp_path / "harness" / "page.py") == (set(), True)
