"""Calls written as text: spot a tool call that a model wrote into its message instead of making it.

Small models often answer with the call as text, `{"name": "read_file", "arguments": {...}}`
(bare, in a ``` fence, or inside `<tool_call>…</tool_call>`), or a ```tool_code block such as
`read_file(path="x")`. The loop sees no tool call and stops with `assistant_finished`, which
looks like an answer. `text_tool_call(text, schemas)` returns `{"name", "arguments"}` of the
first such call of an *offered* tool, or None; the loop attaches it to its `stopped` event so
that the terminal can say why nothing ran.

What counts as a written call, so that prose quoting a tool is not flagged:
- a JSON object with `"name"` (an offered tool) and `"arguments"` or `"parameters"`, anywhere;
- a JSON object with `"name"` and no other key (`{"name": "run_tests"}`, a small model's call
  of a tool without parameters) only when it is the whole message, alone in a ``` fence, or
  alone inside `<tool_call>…</tool_call>`; a JSON object with any other key is no call;
- a call of an offered tool in a ```tool_code block.
The arguments are kept only as JSON holds them: strings, integers, finite floats, booleans,
null, lists and objects with string keys, nested at most MAX_DEPTH deep (an argument in a
tool_code block may be a tuple, a set, bytes...). Anything else is kept as its source text, so
that a recording saves exactly what replay recomputes.

`runnable_call(text, schemas)` is stricter: with `--text-calls` (off by default), the loop
runs a call written as text, as if the model had sent it through the API, only when the
complete turn's text holds exactly one call in a fence or in `<tool_call>` tags, as one JSON
object `{"name": <offered tool>, "arguments": {...}}` and nothing else.

Not here: running anything (the loop decides that; by default a call found in text is shown,
never run), or guessing from prose that merely names a tool. The text is untrusted, so the
work is bounded: no regular expressions, at most MAX_SCAN characters looked at, at most
MAX_ATTEMPTS parses of at most MAX_SPAN characters each.
"""

import ast
import bisect
import json
import math

MAX_SCAN = 64_000  # characters looked at: the first and the last half of a longer message
MAX_SPAN = 8_000  # characters one written call may span
MAX_ATTEMPTS = 64  # JSON objects or tool_code blocks parsed, per message
MAX_DEPTH = 16  # nesting of the arguments kept; a real call nests two or three levels
MAX_INT_BITS = 10_000  # about 3,000 digits: JSON text of any longer integer is refused
UNREADABLE = "<unreadable>"  # an argument whose source text cannot even be rebuilt
NOTE = (
    "the model wrote a {name} call as text; only calls sent as tool calls run — "
    "try a model with better tool support, or a lower temperature"
)

_DECODER = json.JSONDecoder()
_UNREADABLE = (ValueError, SyntaxError, TypeError, RecursionError, MemoryError)


def text_tool_call(text, schemas):
    """`{"name": ..., "arguments": ...}` of a call of an offered tool written in `text`, or None."""
    tools = _offered(schemas)
    if not isinstance(text, str) or not tools:
        return None
    text = text.strip()
    half = MAX_SCAN // 2
    whole = len(text) <= MAX_SCAN  # else two halves, neither of which is the whole message
    segments = (text,) if whole else (text[:half], text[-half:])
    budget = [MAX_ATTEMPTS]  # shared by every segment and both forms
    for segment in segments:
        found = _json_call(segment, tools, budget, whole)
        found = found or _tool_code_call(segment, tools, budget)
        if found:
            return found
    return None


def _offered(schemas):
    """{tool name: its parameter names in order} from the schemas the model was sent."""
    tools = {}
    for schema in schemas or ():
        function = schema.get("function") if isinstance(schema, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            properties = parameters.get("properties") if isinstance(parameters, dict) else None
            tools[function["name"]] = list(properties) if isinstance(properties, dict) else []
    return tools


def _json_call(text, tools, budget, whole):
    """A JSON object `{"name": <offered tool>, "arguments"|"parameters": ...}` in `text`
    (or `{"name": <offered tool>}` alone: see the module docstring).

    Fences and <tool_call> tags need no parsing of their own: the object inside them is
    found like a bare one. Only a `{` with a `"name"` key within MAX_SPAN after it is tried,
    and a parsed object is skipped whole, so nested braces are never tried again.
    """
    names, at = [], text.find('"name"')
    while at >= 0:  # every "name" key, once: linear in the text
        names.append(at)
        at = text.find('"name"', at + 1)
    start = text.find("{")
    while start >= 0 and budget[0] > 0:
        near = bisect.bisect_left(names, start)
        if near == len(names):
            return None  # no "name" key after this brace: nothing further can be a call
        if names[near] - start > MAX_SPAN:
            start = text.find("{", names[near] - MAX_SPAN)
            continue
        budget[0] -= 1
        try:
            value, length = _DECODER.raw_decode(text[start : start + MAX_SPAN])
        except _UNREADABLE:
            start = text.find("{", start + 1)
            continue
        if _is_call(value, tools, text, start, start + length, whole):
            return _as_call(value, text[start : start + length])
        start = text.find("{", start + length)
    return None


def _is_call(value, tools, text, start, end, whole):
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return False
    if value["name"] not in tools:
        return False
    if "arguments" in value or "parameters" in value:
        return True
    return len(value) == 1 and _alone(text, start, end, whole)


def _alone(text, start, end, whole):
    """Whether text[start:end] is the whole message, or all that a fence or <tool_call> holds."""
    if whole and start == 0 and end == len(text):  # the text is stripped
        return True
    before = text[max(0, start - 80) : start].rstrip()
    after = text[end : end + 80].lstrip()
    if before.endswith("<tool_call>") and after.startswith("</tool_call>"):
        return True
    newline = before.rfind("\n")
    if newline < 0 and start > 80:
        return False  # the line before is longer than any fence's opening line
    opening = before[newline + 1 :].strip()  # "```" or "```json", on a line of its own
    ticks = len(opening) - len(opening.lstrip("`"))  # 3 or more; only as many close it
    language = opening[ticks:].strip()  # Markdown allows "``` json"
    fence = ticks >= 3 and (language == "" or language.isalnum())
    return fence and after.startswith("`" * ticks)


def _as_call(value, source):
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):  # some models write the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except _UNREADABLE:  # subtle: a string of 5,000 "[" raises RecursionError
            pass
    # subtle: JSON text may hold NaN or Infinity, which a recording cannot keep as numbers.
    return {"name": value["name"], "arguments": _kept(arguments, source)}


def _tool_code_call(text, tools, budget):
    """A call of an offered tool in a ```tool_code block: `read_file(path="x")`, also as
    `print(read_file(...))` or `default_api.read_file(...)` (Gemma's and Gemini's forms)."""
    start = text.find("```tool_code")
    while start >= 0 and budget[0] > 0:
        body = start + len("```tool_code")
        end = text.find("```", body, body + MAX_SPAN)
        code = text[body : end if end >= 0 else body + MAX_SPAN]
        budget[0] -= 1
        try:  # subtle: ast only parses; nothing written by the model is ever evaluated
            statements = ast.parse(code.strip()).body
        except _UNREADABLE:
            statements = []
        for statement in statements:
            found = _code_call(statement, tools)
            if found:
                return found
        start = text.find("```tool_code", body)
    return None


def _code_call(statement, tools):
    node = statement.value if isinstance(statement, ast.Expr) else None
    if _is_call_of(node, ("print",)) and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if not isinstance(node, ast.Call):
        return None
    function = node.func
    if isinstance(function, ast.Attribute) and _is_name(function.value, ("default_api",)):
        name = function.attr
    elif isinstance(function, ast.Name):
        name = function.id
    else:
        return None
    if name not in tools:
        return None
    arguments = dict(zip(tools[name], map(_literal, node.args), strict=False))
    arguments.update((k.arg, _literal(k.value)) for k in node.keywords if k.arg)
    return {"name": name, "arguments": arguments}  # each value is kept (checked) on its own


def _is_call_of(node, names):
    return isinstance(node, ast.Call) and _is_name(node.func, names)


def _is_name(node, names):
    return isinstance(node, ast.Name) and node.id in names


def _literal(node):
    """A literal argument's value; anything else as its source text (never evaluated)."""
    try:  # subtle: both recurse, so `1+1+...+1` makes either raise RecursionError
        return _kept(ast.literal_eval(node), lambda: ast.unparse(node))
    except _UNREADABLE:
        pass
    try:
        return ast.unparse(node)
    except _UNREADABLE:
        return UNREADABLE


def _kept(value, source):
    """`value` if JSON holds it as it is (see the module docstring), else `source` (its text,
    or a function giving it)."""
    if _json_native(value, MAX_DEPTH):
        return value
    return source() if callable(source) else source


def _json_native(value, depth):
    pending = [(value, depth)]
    while pending:  # iterative: the value may be nested far deeper than the stack allows
        value, depth = pending.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                return False
        elif isinstance(value, (list, dict)):
            if depth == 0:
                return False
            if isinstance(value, dict):
                if not all(isinstance(key, str) for key in value):
                    return False
                value = value.values()
            pending += [(item, depth - 1) for item in value]
        elif isinstance(value, int):  # also a bool
            if value.bit_length() > MAX_INT_BITS:
                return False  # subtle: json.dumps refuses an int of over 4,300 digits
        elif not (value is None or isinstance(value, str)):
            return False
    return True


# --- calls written as text that may run (--text-calls) -----------------------------------------


def runnable_call(text, schemas):
    """`{"name", "arguments"}` of the one call written in `text` that may run, or None.

    It may run only if it is the only call in the text's fences and `<tool_call>` blocks, a
    JSON object with an offered tool's `"name"` and, if any, `"arguments"` that are an
    object (or a JSON string of one), and no other key. Two calls, a call in prose, a bare
    call, a tool_code block: none runs (the stop still names the first, as text_tool_call
    does), since which one the model meant, and whether it meant it, is a guess.
    """
    tools = _offered(schemas)
    if not isinstance(text, str) or len(text) > MAX_SCAN or not tools:
        return None
    found = []
    for body in _blocks(text):
        if len(body) > MAX_SPAN:
            continue
        try:
            value = json.loads(body)
        except _UNREADABLE:
            continue
        if isinstance(value, dict) and value.get("name") in tools:
            found.append(value)
    if len(found) != 1 or not set(found[0]) <= {"name", "arguments"}:
        return None
    call = _as_call(found[0], source=None)
    return call if isinstance(call["arguments"], dict) else None


def _blocks(text):
    """What each fence (``` or longer, with at most a word after it) and each
    <tool_call>…</tool_call> of `text` holds, stripped."""
    lines, inside, ticks, held = text.split("\n"), False, 0, []
    for line in lines:
        stripped = line.strip()
        if not inside:
            count = len(stripped) - len(stripped.lstrip("`"))
            if count >= 3 and (stripped[count:].strip().isalnum() or not stripped[count:].strip()):
                inside, ticks, held = True, count, []
        elif stripped == "`" * ticks:
            inside = False
            yield "\n".join(held).strip()
        else:
            held.append(line)
    start = text.find("<tool_call>")
    while start >= 0:
        end = text.find("</tool_call>", start)
        if end < 0:
            return
        yield text[start + len("<tool_call>") : end].strip()
        start = text.find("<tool_call>", end)


# What the loop appends after running a call written as text: a user message, since no
# call was made through the API for a tool message to answer (the conversation says what
# happened; the OpenAI wire would refuse a tool result without the call it answers).
WRITTEN_RESULT = "The {name} call you wrote ran. Its result:\n{result}"


def calls_from_text(text, schemas):
    """The loop's calls for a turn that made none: [the runnable call, marked "from_text"],
    or [] (see runnable_call)."""
    call = runnable_call(text, schemas)
    if call is None:
        return []
    return [{"function": call, "from_text": True}]


def written_result(name, content):
    """The message that returns a written call's result (`content`, its JSON text)."""
    return {"role": "user", "content": WRITTEN_RESULT.format(name=name, result=content)}
