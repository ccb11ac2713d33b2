"""An MCP server of Python's own documentation for the modules this task is about:
`python3 lab.py run record_run.py --mcp ".venv/bin/python mcp_servers/pydocs.py"` (its
Python needs the SDK: docs/mcp.md).

Two tools, over stdio, written with the official SDK's server API (`MCPServer`): `lookup`
returns pydoc's text of one name (`ntpath.normpath`, `pathlib.PurePath.as_posix`,
`str.replace`), `search` the names whose documentation holds a word. Only the modules in
MODULES are read: a name a model chose never imports anything else.

Not here: anything that writes, runs a command or reads a file.
"""

import inspect
import pydoc

from mcp.server.mcpserver import MCPServer

MODULES = ("ntpath", "posixpath", "pathlib", "fnmatch", "str")  # what a path bug touches
LIMIT = 4000  # characters of one answer

server = MCPServer("pydocs")


@server.tool()
def lookup(name: str) -> str:
    """Python's documentation of one name in ntpath, posixpath, pathlib, fnmatch or str,
    e.g. ntpath.normpath or str.replace."""
    if name.split(".")[0] not in MODULES or pydoc.locate(name) is None:
        return f"not found: {name[:80]}; give a name in one of {', '.join(MODULES)}"
    return pydoc.render_doc(name, "%s", renderer=pydoc.plaintext)[:LIMIT]


@server.tool()
def search(word: str) -> str:
    """The names in ntpath, posixpath, pathlib, fnmatch and str whose documentation
    mentions a word (case ignored), e.g. backslash or separator."""
    found = []
    for module in MODULES:
        owner = pydoc.locate(module)
        for attribute in sorted(dir(owner)):
            value = getattr(owner, attribute, None)
            doc = "" if inspect.ismodule(value) else getattr(value, "__doc__", None) or ""
            if not attribute.startswith("_") and word.lower() in doc.lower():
                found.append(f"{module}.{attribute}: {doc.strip().splitlines()[0][:100]}")
    return "\n".join(found[:40]) or f"no name mentions {word[:80]!r}"


if __name__ == "__main__":
    server.run()
