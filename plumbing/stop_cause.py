"""Why a model turn was cut off: what a stop `incomplete_model_turn` says beside its name.

The loop stops with `incomplete_model_turn` for two causes, and acts on neither (a partial
turn may hold a half-decided call): the server ended the answer at its token budget
(Ollama's `done_reason: "length"`; OpenAI's `finish_reason: "length"`, which
openai_wire.py turns into the same), or the stream ended before the server's final chunk.
`LastTurn` wraps the chat the loop is given (harness/driver.py, ask.py) and keeps, of the
call being read, its final chunk, its text and the tools it offered; `cause_lines()` says
which cause it was and, when the text holds a call written as text (plumbing/text_calls.py),
the likely reason the server never made it a call. A replay feeds the recorded chunks
through the same wrapper, so it prints the same lines; `ended_for_length` reads a recording's
saved model call, for the page.

Not here: deciding the stop (agent_loop.py), or any other stop's words (console.py).
"""

from plumbing.text_calls import text_tool_call

LENGTH = (
    'cause: the server ended the answer at its token budget (done_reason "length"): '
    "raise --max-tokens (Ollama's num_predict, OpenAI's max_tokens)"
)
BROKEN = (
    "cause: the stream ended before the server's final chunk (no done_reason): the server "
    "or the connection stopped mid-answer; the server's log may say why"
)
# subtle: --text-calls would not help here: it runs a written call of a complete turn only
WRITTEN = (
    "note: the text so far holds a {name} call written as text, so the server never ended "
    "the turn on it: likely the chat template (llama-server: --jinja --chat-template-file "
    "FILE; docs/own-model.md)"
)


class LastTurn:
    """A chat (same call, same chunks) that keeps what `cause_lines` needs of its last call."""

    def __init__(self, chat):
        self.chat = chat
        self.final, self.text, self.schemas = None, [], None

    def __call__(self, messages, tools):
        self.final, self.text, self.schemas = None, [], tools
        return self._kept(self.chat(messages, tools))

    def _kept(self, stream):
        try:
            for chunk in stream:
                # subtle: seen before the loop checks the chunk's shape (chunk_shape.py)
                message = chunk.get("message") if isinstance(chunk, dict) else None
                content = message.get("content") if isinstance(message, dict) else None
                if isinstance(content, str) and content:
                    self.text.append(content)
                if isinstance(chunk, dict) and chunk.get("done") is True and not self.final:
                    self.final = chunk
                yield chunk
        finally:
            if hasattr(stream, "close"):
                stream.close()  # the loop's close reaches the wire through this wrapper

    def cause_lines(self):
        """The lines that say why the last call's turn did not complete."""
        length = self.final is not None and self.final.get("done_reason") == "length"
        lines = [LENGTH if length else BROKEN]
        written = text_tool_call("".join(self.text), self.schemas)
        if written:
            lines.append(WRITTEN.format(name=written["name"]))
        return lines


def ended_for_length(saved):
    """Whether a recording's saved model call ended at the token budget: its final chunk
    says `done_reason: "length"` (Ollama), or one of its raw events `finish_reason:
    "length"` (OpenAI)."""
    for chunk in saved.get("chunks") or ():
        if isinstance(chunk, dict) and chunk.get("done") is True:
            return chunk.get("done_reason") == "length"
    for event in saved.get("events") or ():
        choices = event.get("choices") if isinstance(event, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        if isinstance(choice, dict) and choice.get("finish_reason") is not None:
            return choice["finish_reason"] == "length"
    return False
