"""The two chat wrappers of recordings: one keeps a live model's stream, one plays it back.

`RecordingChat` wraps a live `chat` and keeps every chunk it yields, per model call, with
when each arrived and how the stream ended. `ReplayChat` plays those calls back to the
loop: the same chunks, an error re-raised at the same point, a stream that ended without
`done` ending there again. Both have the loop's own `chat(messages, tools)` interface.

Not here: talking to a model (local_model.py, openai_model.py), saving what was kept
(harness/recording.py), comparing a replay with its recording (harness/divergence.py).
"""

import time

from harness.recording_format import ENDED_CLOSED, ENDED_DONE, ENDED_ERROR, ENDED_WITHOUT_DONE
from plumbing.limits import DeadlineExceeded


class RecordedModelError(Exception):
    """A model call that failed when it was recorded, failing again at the same point."""


class ReplayExhausted(Exception):
    """The loop asked for a model call that the recording does not hold."""


class RecordingChat:
    """Wraps a live model, keeping every item of every call as the wire adapter yielded it.

    For Ollama, `source` is the chat itself and its chunks are kept. For a wire whose raw
    events must be assembled into chunks (OpenAI-compatible servers), `source` yields the
    raw events, which are kept, and `assemble` turns them into the loop's chunks, so that
    replay can run the very same assembly code again.
    """

    def __init__(self, source, assemble=None):
        self.source, self.assemble = source, assemble
        self.key = "events" if assemble else "chunks"
        self.calls = []
        self.children = []  # the chats of child runs made from it (--explorer's), in order

    def __call__(self, messages, tools):
        saved = {"request_length": len(messages), self.key: [], "ended": ENDED_WITHOUT_DONE}
        saved["arrived"] = []  # seconds from the request to each item: the page draws them
        self.calls.append(saved)
        started = time.monotonic()
        return self._watch(saved, self._keep(saved, self.source(messages, tools), started))

    def _keep(self, saved, items, started):
        try:
            for item in items:
                saved[self.key].append(item)
                saved["arrived"].append(round(time.monotonic() - started, 4))
                yield item
        finally:
            items.close()  # subtle: closing a generator does not close what it iterates

    def _watch(self, saved, raw):
        stream = self.assemble(raw) if self.assemble else raw
        try:
            for chunk in stream:
                if isinstance(chunk, dict) and chunk.get("done") is True:
                    saved["ended"] = ENDED_DONE
                yield chunk
        except DeadlineExceeded:  # our own clock closed the stream, as the loop does
            if saved["ended"] != ENDED_DONE:
                saved["ended"] = ENDED_CLOSED
            raise
        except Exception as error:
            saved["ended"], saved["error"] = ENDED_ERROR, str(error) or type(error).__name__
            raise
        except BaseException:  # the loop closed the stream early, or Ctrl-C
            if saved["ended"] != ENDED_DONE:
                saved["ended"] = ENDED_CLOSED
            raise
        finally:
            stream.close()
            raw.close()


class ReplayChat:
    """Plays saved model calls back, one per request, keeping each request it was sent.

    A saved call that ended in an error raises it again right after its last saved item,
    inside the raw stream, so an assembler sees the failure where the live one did. A call
    that came over the OpenAI wire (`api`, or the call's own in a fork) holds raw events,
    which `assemble` turns into chunks again.
    """

    def __init__(self, model_calls, assemble=None, api="ollama"):
        self.model_calls, self.assemble, self.api = model_calls, assemble, api
        self.requests = []

    @property
    def calls(self):
        """The saved calls played back so far, as a RecordingChat's `calls` are those made."""
        return self.model_calls[: len(self.requests)]

    def __call__(self, messages, tools):
        self.requests.append(messages)
        number = len(self.requests)
        if number > len(self.model_calls):
            raise ReplayExhausted(
                f"the loop asked for model call {number}, but only "
                f"{len(self.model_calls)} were recorded"
            )
        saved = self.model_calls[number - 1]
        if saved.get("api", self.api) == "openai":
            return self.assemble(self._raw(saved, saved["events"]))
        return self._raw(saved, saved["chunks"])

    def _raw(self, saved, items):
        yield from items
        if saved["ended"] == ENDED_ERROR:
            raise RecordedModelError(saved.get("error", "recorded model error"))
