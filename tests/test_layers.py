"""The lab stands in floors, and a module imports only from its own floor or those below:

1. `plumbing/`, the floor: limits, isolation, children of edited code, the held-out checks;
2. the loop, the adapters, the tools and the judge (files of the top folder);
3. `harness/`: what runs the loop, records, replays and shows its runs;
4. `extensions/`: the wrappers around the loop, which programs turn on;
5. the programs and the lesson's two test files (every other file of the top folder).

There is no list of allowed exceptions: an arrow back down-to-up fails, wherever the import
stands (a late import inside a function counts), and so does any circle, within a floor too.
Read from the sources' imports (ast), so a new upward arrow fails here before anyone runs it.
"""

import ast
from pathlib import Path

LAB = Path(__file__).resolve().parent.parent
CORE = {"agent_loop", "local_model", "openai_model", "repo_tools", "readonly_tools"}
CORE |= {"tool_guard", "verdict"}
FLOORS = ("plumbing", "the loop, the adapters, the tools and the judge", "harness")
FLOORS += ("extensions", "the programs")


def modules(lab=LAB):
    """{dotted module name: its file} for every module of the lab (tests/ apart)."""
    found = {}
    for path in [*lab.glob("*.py"), *lab.glob("*/*.py")]:
        parts = path.relative_to(lab).with_suffix("").parts
        if parts[0] not in ("plumbing", "harness", "extensions") and len(parts) > 1:
            continue  # tests/, sample_repo/, tasks/: not the lab's modules
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def floor(name):
    top = name.split(".")[0]
    if top in ("plumbing", "harness", "extensions"):
        return FLOORS.index(top)
    return FLOORS.index(FLOORS[1] if top in CORE else "the programs")


def arrows(lab=LAB):
    """{module: {modules of the lab it imports}}, an import inside a function included."""
    known = modules(lab)
    graph = {}
    for name, path in known.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets.add(node.module)
                targets |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {t for t in targets if t in known and t != name}
        graph[name] -= {t for t in graph[name] if "." not in t and t in ("plumbing", "harness")}
    return graph


def upward(graph):
    return sorted(
        (module, FLOORS[floor(module)], target, FLOORS[floor(target)])
        for module, targets in graph.items()
        for target in targets
        if floor(target) > floor(module)
    )


def circles(graph):
    """The circles of imports: one for each import that closes one, in a walk of the graph."""
    found, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module]):
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
    (tmp_path / "ask.py").write_text("import verdict\nfrom harness import page\n")
    graph = arrows(tmp_path)
    assert upward(graph) == [
        ("extensions.hooks", "extensions", "ask", "the programs"),
        ("harness.page", "harness", "extensions.hooks", "extensions"),
        ("verdict", FLOORS[1], "harness.page", "harness"),
    ]
    assert circles(graph) == [
        ["plumbing.limits", "plumbing.bounds", "plumbing.limits"],
        ["ask", "harness.page", "extensions.hooks", "ask"],
    ]
