"""`--keep-results N`: each request sends the last N tool results whole, and each older one
as one line that says what it was.

A conversation grows by every tool result, and the loop sends all of it again each turn: a
small model re-reads the same files until its context window is full. OpenHands and Cursor
summarise old turns with the model; "The Complexity Trap" (Lindenbauer et al., 2025) found
on SWE-bench Verified that simply masking old tool observations halved the cost and matched
the solve rate. This wrapper does the masking: it has the chat's own call, `(messages,
tools)`, and sends the model a copy in which every tool result but the last N is replaced
by one line, `[read_file path_rules.py: 11 lines, sent in turn 2]`. The loop's `messages`,
the conversation it keeps, are never changed: only the request is.

Decisions: `shortened`, once per result, at the request that first sends it as its line
(`call`: how many calls the tools had run by then). The request a recording says was sent
is its messages with those lines in place (harness/decisions.py: `as_sent`).

Not here: summarising with the model, a result returned as a user message (a call written
as text, --text-calls: it stays whole), the other messages (the model's own turns).
"""

import json

from extensions.extension import FROM_CALL, Extension
from harness.decisions import KEEP_RESULTS, SHORTENED, with_lines
from plumbing.limits import is_whole, positive_int

KEEP = "keep"  # its setting: how many tool results are sent whole


class KeepResults(Extension):
    """The loop's `chat`, sending the last `keep` tool results whole and the older ones
    shortened; it shortens nothing before the request after call `since` - 1 (a fork's
    replayed turns go as its parent's went)."""

    name, page, wraps = KEEP_RESULTS, "context", "chat"  # the words harness/decisions.py reads

    @staticmethod
    def flag(parser, kinds):
        # its help's last sentence speaks of every flag of an extension, all above it
        parser.add_argument(
            "--keep-results", type=positive_int, metavar="N",
            help="send the last N tool results whole and each older one as one line that says "
            "what it was; the conversation is kept whole (docs/context.md) (default: all "
            "whole). Each of these is kept in the recording, applied again by replay, and with "
            "--fork added to the recording's own from its first live call",
        )  # fmt: skip

    @classmethod
    def chosen(cls, args):
        return {KEEP: args.keep_results} if args.keep_results else None

    @classmethod
    def settings_problem(cls, settings):
        whole = all(is_whole(n, 1) for n in settings.values())
        if whole and KEEP in settings and set(settings) <= {KEEP, FROM_CALL}:  # N is needed
            return None
        return (f'the settings of extension {cls.name!r} must be {{"keep": N}} or '
                '{"keep": N, "from_call": M}, N and M from 1')  # fmt: skip

    @classmethod
    def wrapped(cls, chat, settings, extensions):
        return cls(chat, settings[KEEP], extensions.log, settings.get(FROM_CALL, 1))

    def __init__(self, chat, keep, log, since=1):
        self.chat, self.keep, self.log, self.since = chat, keep, log, since
        self.lines = []  # the line of each result shortened so far, oldest first

    def __call__(self, messages, tools):
        if self.log.calls + 1 >= self.since:
            results = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
            for index in results[len(self.lines) : max(0, len(results) - self.keep)]:
                line = stand_in(messages, index)
                self.lines.append(line)
                self.log.decisions.append({"extension": self.name, "call": self.log.calls,
                                           "decision": SHORTENED, "said": line})  # fmt: skip
        return self.chat(with_lines(messages, self.lines), tools)  # a copy: messages stay whole


def stand_in(messages, index):
    """The one line that says what the tool result `messages[index]` was, and in which
    turn's request it was first sent whole (the turn after the one that asked for it)."""
    message, before = messages[index], messages[:index]
    turn = sum(m.get("role") == "assistant" for m in before) + 1
    try:
        result = json.loads(message["content"])
    except (TypeError, ValueError):  # a fork's hand-written result may be any text
        result = None
    result = result if isinstance(result, dict) else {}
    path = result.get("path")
    named = (
        f"{message.get('tool_name')} {path}" if isinstance(path, str) else message.get("tool_name")
    )
    text = result.get("text")
    if isinstance(text, str):
        size = f"{len(text.splitlines())} lines"
    else:
        size = f"{len(str(message.get('content'))):,} characters"
    if "error" in result:
        size = f"an error, {size}"
    return f"[{named}: {size}, sent in turn {turn}]"
