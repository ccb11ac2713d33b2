"""What the two wire adapters share about failing: the waits, reading a host, and the shape
of turning one failure into one actionable message.

local_model.py (the ollama SDK over httpx) and openai_model.py (http.client) meet different
exceptions and give different advice (`ollama serve`, `ollama pull`; an API root ending in
/v1), so each keeps its own messages and its own table of which failure gets which: that
difference is part of what the lab teaches about each wire. What is the same is here: how
long to wait, a bare "host:port" read as http://, the message for a stalled server, and the
translation itself: a wait that ran into the run's deadline raises the deadline's own error
(the loop stops with `deadline`); any other failure becomes the adapter's exception with the
first message of its table that matches, or the error's own name and text.

Not here: any wire, retries, or the loop's view of a failed turn (agent_loop.py).
"""

READ_TIMEOUT = 120.0  # seconds without a byte from the server; the SDK's default is no limit
CONNECT_TIMEOUT = 10.0
DEADLINE_MARGIN = 0.05  # seconds: a wait that failed this close to the deadline ran into it

# `server` names the server the way each adapter's other messages do.
STALLED = (
    "{server} sent nothing for {seconds:g} s: it may be stalled, or a slow machine may "
    "still be reading the prompt; raise --timeout to wait longer ({detail})"
)


def with_scheme(host):
    """`host` as a URL: a bare "host:port" (as OLLAMA_HOST is often written) gets http://."""
    return host if "://" in host else f"http://{host}"


def explain(error, messages, **where):
    """One sentence for `error`: the template of the first `(exception types, template)` in
    `messages` that it is an instance of, filled in with `where` and `detail` (the error);
    for an error no row names, the error's own type and text."""
    for kinds, template in messages:
        if isinstance(error, kinds):
            return template.format(detail=error, **where)
    return f"{type(error).__name__}: {error}"


def translated(error, deadline, failure, cut=False):
    """What to raise for `error` from the wire: the deadline's own error when a wait ran into
    it (or `cut`: the watchdog shut the socket), else `failure`, the adapter's exception."""
    if cut or deadline.expired(margin=DEADLINE_MARGIN):
        return deadline.error()
    return failure
