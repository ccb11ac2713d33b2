"""What of an MCP server's tools a model is offered, and what of a call comes back to it.

Each tool is offered as `SERVER__TOOL` with the server's own description and input schema
(`schemas`); a server is taken only when its tools can be offered (`offer_problem`: names a
model can call, a schema, not too many, not too much schema for every request), and a
recording's settings only when they say such tools (`settings_problem`). A call's arguments
are checked against the tool's schema (`arguments_problem`, with the `jsonschema` the SDK
brings: live runs only), and the server's answer becomes a result of the lab's shape,
bounded (`result_of`).

Not here: talking to the server (plumbing/mcp_client.py), deciding and recording
(extensions/mcp_tools.py).
"""

import json
import re

SEPARATOR = "__"  # between the server's name and its tool's, as the model sees each
SERVERS_LIMIT, TOOLS_LIMIT = 4, 32  # servers a run starts; tools one may offer
SCHEMA_LIMIT = 20_000  # characters of one server's tools as the model is sent them
# subtle: a tool is kept in the recording's settings nine levels down, and load() takes no
# recording nested deeper than 100 (harness/recording_checks.py): a deeper tool would make
# a run whose recording cannot be read again
TOOL_DEPTH = 32
RESULT_LIMIT = 8_000  # characters of a result's text the model reads, as read_file's
# a tool's name, as a model calls it: with a server's name (at most 20) and `__`, at most
# 64 characters, the longest function name OpenAI's API (and servers that copy it) takes
NAME = re.compile(r"[A-Za-z0-9_-]{1,42}")
SERVER_LENGTH = 20
# subtle: a server's name holds no `__` and does not end in `_`, so the first `__` of
# SERVER__TOOL ends it: no two servers' tools are offered under one name (`a__b` with `c`,
# `a` with `b__c`)
SERVER_NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")


def schemas(server, tools):
    """The function schemas the model is sent for `server`'s `tools`."""
    return [{"type": "function", "function": {"name": f"{server}{SEPARATOR}{t['name']}",
             "description": t.get("description", ""), "parameters": t["inputSchema"]}}
            for t in tools]  # fmt: skip


def schema_size(server, tools):
    """Characters of `server`'s tools in every request, as JSON."""
    return len(json.dumps(schemas(server, tools)))


def server_word(said):
    """A server's own name (`serverInfo.name`) made a name the offer takes, or `mcp`."""
    word = "_".join(w for w in re.sub(r"[^A-Za-z0-9_-]", "", said).split("_") if w)
    return word[:SERVER_LENGTH].strip("_") or "mcp"


def _offerable(tool):
    return (isinstance(tool, dict) and isinstance(tool.get("name"), str)
            and NAME.fullmatch(tool["name"]) is not None
            and isinstance(tool.get("inputSchema"), dict)
            and isinstance(tool.get("description", ""), str))  # fmt: skip


def _deeper(value, levels):
    """Whether JSON data nests objects and lists deeper than `levels` (read without recursion)."""
    todo = [(value, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, (dict, list)):
            if depth > levels:
                return True
            todo += [(v, depth + 1) for v in (value.values() if isinstance(value, dict) else value)]
    return False


def offer_problem(name, tools, taken=()):
    """Why a server named `name` with `tools` (its tools/list) cannot be offered, or None."""
    if not (len(name) <= SERVER_LENGTH and SERVER_NAME.fullmatch(name)):
        return f"its name {name!r:.60} is no word of letters, digits, - and single _"
    if name.lower() in {other.lower() for other in taken}:  # which would a reader tell apart?
        return f"a second server named {name}"
    if not tools or len(tools) > TOOLS_LIMIT:
        return f"it offers {len(tools)} tools; from 1 to {TOOLS_LIMIT} are taken"
    bad = next((t for t in tools if not _offerable(t)), None)
    if bad is not None:
        named = bad.get("name") if isinstance(bad, dict) else bad
        return f"its tool {str(named)!r:.60} has no name a model can call, or no schema"
    deep = next((t["name"] for t in tools if _deeper(t, TOOL_DEPTH)), None)
    if deep is not None:
        return f"its tool {deep} is nested deeper than {TOOL_DEPTH} levels"
    names = [t["name"] for t in tools]
    if len(set(names)) < len(names):
        return f"it offers two tools named {next(n for n in names if names.count(n) > 1)}"
    size = schema_size(name, tools)
    if size > SCHEMA_LIMIT:
        return f"its tools' schemas are {size:,} characters, more than {SCHEMA_LIMIT:,}"
    return None


def settings_problem(settings):
    """Why a recording's settings of --mcp are not what a run keeps, in words, or None."""
    servers = settings.get("servers") if set(settings) == {"servers"} else None
    keys = {"command", "name", "tools"}
    if not (isinstance(servers, list) and 0 < len(servers) <= SERVERS_LIMIT
            and all(isinstance(s, dict) and set(s) == keys for s in servers)):  # fmt: skip
        return 'the settings of --mcp must be {"servers": [{command, name, tools}]}'
    taken = set()
    for server in servers:
        name, tools = server["name"], server["tools"]
        if not (isinstance(name, str) and NAME.fullmatch(name) and isinstance(tools, list)):
            return "an MCP server's name must be a word, its tools a list"
        problem = offer_problem(name, tools, taken)
        if problem:
            return f"MCP server {name}: {problem}"
        taken.add(name)
    return None


def parsed(arguments):
    """A call's arguments as an object (JSON text, as OpenAI-compatible servers send them)."""
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def arguments_problem(schema, arguments):
    """Why `arguments` do not fit the tool's JSON Schema, in one line, or None."""
    import jsonschema  # the SDK's own dependency: live runs only

    try:
        arguments = parsed(arguments)
    except ValueError as error:
        return f"the arguments are not valid JSON ({error})"
    try:
        check = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(check.iter_errors(arguments))
    except Exception as error:  # noqa: BLE001 -- subtle: a server's schema may name an
        # unknown type, a bad pattern or refer to itself without end (RecursionError)
        said = " ".join(f"{type(error).__name__}: {error}".split())[:100]
        return f"its own schema cannot check them ({said})"
    return None if error is None else error.message[:300]


def result_of(server, answer):
    """(`called` or `failed`, the result the model reads) of the server's `tools/call`
    answer: its text content joined and bounded; an answer that says it is an error, as one."""
    texts = [c.get("text") for c in answer.get("content", []) if c.get("type") == "text"]
    text = "\n".join(t for t in texts if isinstance(t, str))
    if answer.get("isError"):
        return "failed", {"error": f"{server} said: {text[:2000]}"}
    result = {"server": server, "text": text[:RESULT_LIMIT]}
    if len(text) > RESULT_LIMIT:
        result["note"] = f"cut at {RESULT_LIMIT:,} of {len(text):,} characters"
    return "called", result
