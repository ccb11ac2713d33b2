from path_rules import python_sources


def test_keeps_only_python_files_under_src():
    changed = ["src/app.py", "docs/setup.md", "tests/test_app.py"]
    assert python_sources(changed) == ["src/app.py"]


def test_keeps_nested_python_files():
    assert python_sources(["src/api/routes.py"]) == ["src/api/routes.py"]


def test_accepts_windows_separators():
    assert python_sources([r"src\api\routes.py"]) == ["src/api/routes.py"]


def test_no_changes_selects_nothing():
    assert python_sources([]) == []


def test_keeps_the_order_given():
    assert python_sources(["src/b.py", "src/a.py"]) == ["src/b.py", "src/a.py"]
