"""What the terminal shows of a run's extensions as it goes: which are on (and the pages
that explain them) at the first event, each decision after the next event that is not
streamed text (a call's result, a turn's end), and what each extension says of an event
(`noted`: --plan says where the plan is). A replay shows the same lines.

A decision's line is the page's too (harness/decisions.py's `decision_line`): `[syntax]
undone: SyntaxError ...`, `[approve] allowed: by the user (you took 3.2 s to decide)`.

Not here: the decisions themselves (each extension's), the events' own lines (harness/).
"""

from agent_loop import TEXT_DELTA, THINKING_DELTA
from harness.decisions import decision_line


def watching(extensions, then=None, out=None):
    """A `watch` for harness/driver.py's drive that shows what `extensions` (the composer's
    Extensions) do, then calls `then` (another watch, or None); `then` alone if none is on."""
    if not extensions.on:
        return then
    on = [
        kind.shown(e["settings"]) for kind, e in zip(extensions.kinds, extensions.on, strict=True)
    ]
    pages = dict.fromkeys(f"docs/{kind.page}.md" for kind in extensions.kinds)
    heading, shown, log = f"Extensions on: {', '.join(on)} ({', '.join(pages)})", 0, extensions.log

    def watch(event, messages):
        nonlocal heading, shown
        if heading:  # at the first event, before anything of turn 1
            print(heading, file=out)  # out None: sys.stdout, as the printer's
            heading = None
        if event["type"] not in (THINKING_DELTA, TEXT_DELTA):  # never inside a stream
            for decision in log.decisions[shown:]:
                print(f"  {decision_line(decision)}", file=out)
            shown = len(log.decisions)
        for line in filter(None, (kind.noted(event) for kind in extensions.kinds)):
            print(f"  {line}", file=out)
        if then:
            then(event, messages)

    return watch
