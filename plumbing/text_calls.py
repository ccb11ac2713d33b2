"""Calls written as text: the tool calls a model wrote in its message instead of making them.

Small models often write the call into their answer: `{"name": "read_file", "arguments":
{...}}` (bare, in a ``` fence, or in `<tool_call>…</tool_call>`), or a ```tool_code block such
as `read_file(path="x")`. The loop then sees no call and stops, which looks like an answer.
One scanner, `written_calls`, finds each call written in a message, and each use takes what
it needs: the stop names the first (`text_tool_call`), so that the terminal and the page say
why nothing ran; `--text-calls` (off by default) runs the turn's action (`runnable_call`).

A written call is a call of an offered tool: a JSON object with its `"name"` and `"arguments"`
(or `"parameters"`), anywhere; one with `"name"` and no other key only when it is all that a
block holds (the whole message, a closed fence, `<tool_call>…</tool_call>`); or a call in a
```tool_code block, also as `print(...)` or `default_api.read_file(...)`. Fences are read by
plumbing/fenced_blocks.py, Markdown's way (CommonMark's rule, as the one-shot answer's are):
a fence's language is its info string's first word, and a fence indented by four spaces or
more is no fence.

The rule for running: the call must be the turn's action, that is the text's only written
call, all that a json fence (```json, ~~~json) or a bare one (```) or a `<tool_call>` block
holds, on lines of its own with nothing but whitespace after it, with arguments that are an
object. A call quoted in a sentence, in inline code, in a fence of another language or
followed by more text runs nothing and is named at the stop; so is a bare object, a
tool_code block, or one of two calls (which one the model meant would be a guess).

Arguments are kept only as JSON holds them (strings, integers, finite floats, booleans, null,
lists, objects with string keys, at most MAX_DEPTH deep); anything else (a tuple in tool_code,
NaN in JSON text) as its source text, so that a recording saves what replay recomputes.

Not here: running anything (the loop does, through the tool guard), or guessing from prose
that merely names a tool. The text is untrusted: no regular expressions, at most MAX_SCAN
characters looked at, MAX_ATTEMPTS parses of at most MAX_SPAN characters, nothing evaluated.
"""

import ast
import bisect
import json
import math
from typing import NamedTuple

from plumbing import fenced_blocks

MAX_SCAN = 64_000  # characters looked at: the first and the last half of a longer message
MAX_SPAN = 8_000  # characters one written call may span
MAX_ATTEMPTS = 64  # JSON objects or tool_code blocks parsed, per message
MAX_DEPTH = 16  # nesting of the arguments kept; a real call nests two or three levels
MAX_INT_BITS = 10_000  # about 3,000 digits: JSON text of any longer integer is refused
UNREADABLE = "<unreadable>"  # an argument whose source text cannot even be rebuilt
ACTION_FENCES = ("json", "")  # the languages of a fence that may hold the turn's action
OPEN, CLOSE = "<tool_call>", "</tool_call>"
NOTE = (  # the likely cause: a template that does not turn the model's calls into API calls
    "the model wrote a {name} call as text; only calls sent as tool calls run — likely the "
    "chat template (llama-server: --jinja --chat-template-file FILE); --text-calls runs such a call"
)
# What the loop appends after running a call written as text: a user message, since no
# call was made through the API for a tool message to answer (the conversation says what
# happened; the OpenAI wire would refuse a tool result without the call it answers).
WRITTEN_RESULT = "The {name} call you wrote ran. Its result:\n{result}"

_DECODER = json.JSONDecoder()
_UNREADABLE = (ValueError, SyntaxError, TypeError, RecursionError, MemoryError)


class Written(NamedTuple):
    """A call found in the text, and whether it is the turn's action (see the rule above)."""

    call: dict  # {"name": an offered tool, "arguments": ...}
    action: bool


def text_tool_call(text, schemas):
    """`{"name", "arguments"}` of the first call written in `text`, or None: what the stop names."""
    found = written_calls(text, schemas)
    return found[0].call if found else None


def runnable_call(text, schemas):
    """`{"name", "arguments"}` of the call `text` ends with as the turn's action, or None."""
    found = written_calls(text, schemas)
    if len(found) == 1 and found[0].action and isinstance(found[0].call["arguments"], dict):
        return found[0].call
    return None


def calls_from_text(text, schemas):
    """The loop's calls for a turn that made none: [the action, marked "from_text"], or []."""
    call = runnable_call(text, schemas)
    return [{"function": call, "from_text": True}] if call else []


def written_result(name, content):
    """The message that returns a written call's result (`content`, its JSON text)."""
    return {"role": "user", "content": WRITTEN_RESULT.format(name=name, result=content)}


# --- the scanner ------------------------------------------------------------------------------


def written_calls(text, schemas):
    """Every call written in `text`, in the order of the text, each a `Written`."""
    tools = _offered(schemas)
    if not isinstance(text, str) or not tools:
        return []
    text = text.rstrip()  # subtle: not its start, whose first line may be indented code
    half = MAX_SCAN // 2
    whole = len(text) <= MAX_SCAN  # else two halves, neither of which is the whole message
    budget = [MAX_ATTEMPTS]  # shared by both halves and both forms
    found = []
    for segment in (text,) if whole else (text[:half], text[-half:]):
        fences = list(fenced_blocks.fences(segment))  # Markdown's, as CommonMark reads them
        # subtle: tool_code blocks use the budget first, so that once the JSON scan reaches
        # an action at the very end, nothing before it went unparsed
        calls = [c for fence in fences for c in _tool_code_calls(segment, fence, tools, budget)]
        calls += _json_calls(segment, tools, _blocks(segment, fences, whole), budget)
        found += [written for _, written in sorted(calls, key=lambda pair: pair[0])]
    return found


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


def _blocks(text, fences, whole):
    """{(start, end) of all that a block holds, whitespace aside: whether it is an action
    block}. The blocks: the whole message, each closed fence, each <tool_call>…</tool_call>.
    Only a block that ends the whole message can be an action block (`text` ends with no
    whitespace)."""
    blocks = {_inner(text, 0, len(text)): False} if whole else {}  # a bare call is no action
    for fence in fences:
        if fence.closed:
            action = fence.language.lower() in ACTION_FENCES and fence.end == len(text)
            blocks[_inner(text, fence.body, fence.stop)] = whole and action
    start = text.find(OPEN)
    while start >= 0:
        end = text.find(CLOSE, start)
        if end < 0:
            break
        span = _inner(text, start + len(OPEN), end)
        blocks.setdefault(span, False)
        if end + len(CLOSE) == len(text):  # the one block that may be the action
            line = text[:start].rpartition("\n")[2]  # its line, up to its opening tag
            in_a_fence = any(fence.body <= start < fence.end for fence in fences)
            blocks[span] = whole and not line.strip() and not in_a_fence
        start = text.find(OPEN, end)
    return blocks


def _inner(text, start, end):
    """(start, end) of text[start:end] without the whitespace around it."""
    held = text[start:end]
    return start + len(held) - len(held.lstrip()), start + len(held.rstrip())


def _json_calls(text, tools, blocks, budget):
    """(position, Written) of each JSON call in `text`.

    Only a `{` with a `"name"` key within MAX_SPAN after it is tried, and a parsed object is
    skipped whole, so nested braces are never tried again.
    """
    names, at = [], text.find('"name"')
    while at >= 0:  # every "name" key, once: linear in the text
        names.append(at)
        at = text.find('"name"', at + 1)
    found, start = [], text.find("{")
    while start >= 0 and budget[0] > 0:
        near = bisect.bisect_left(names, start)
        if near == len(names):
            break  # no "name" key after this brace: nothing further can be a call
        if names[near] - start > MAX_SPAN:
            start = text.find("{", names[near] - MAX_SPAN)
            continue
        budget[0] -= 1
        try:
            value, length = _DECODER.raw_decode(text[start : start + MAX_SPAN])
        except _UNREADABLE:
            start = text.find("{", start + 1)
            continue
        end = start + length
        action = blocks.get((start, end))  # None: not all that a block holds
        if _is_call(value, tools, alone=action is not None):
            found.append((start, Written(_as_call(value, text[start:end]), bool(action))))
        start = text.find("{", end)
    return found


def _is_call(value, tools, alone):
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return False
    if value["name"] not in tools:
        return False
    return "arguments" in value or "parameters" in value or (alone and len(value) == 1)


def _as_call(value, source):
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):  # some models write the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except _UNREADABLE:  # subtle: a string of 5,000 "[" raises RecursionError
            pass
    # subtle: JSON text may hold NaN or Infinity, which a recording cannot keep as numbers.
    return {"name": value["name"], "arguments": _kept(arguments, source)}


def _tool_code_calls(text, fence, tools, budget):
    """(position, Written) of each call of an offered tool in a ```tool_code fence. Its code
    ends at the first run of three of its fence's marker (```) in it: a fence closed on a
    line with more text stays open (as one cut off by the model's token limit does), and is
    read to MAX_SPAN."""
    if fence.language != "tool_code" or budget[0] <= 0:
        return []
    budget[0] -= 1
    code = fenced_blocks.held(text, fence, MAX_SPAN).partition(fence.marker * 3)[0]
    try:  # subtle: ast only parses; nothing written by the model is ever evaluated
        statements = ast.parse(code.strip()).body
    except _UNREADABLE:
        return []
    calls = (_code_call(statement, tools) for statement in statements)
    return [(fence.body, Written(call, False)) for call in calls if call]


def _code_call(statement, tools):
    node = statement.value if isinstance(statement, ast.Expr) else None
    printed = isinstance(node, ast.Call) and _is_name(node.func, ("print",))
    if printed and len(node.args) == 1 and not node.keywords:
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
