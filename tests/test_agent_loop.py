"""agent_loop.py past test_loop.py's walk-through: the loop closes a stream it leaves (so
the server stops generating), says how long a turn it cut took even when that is no
measurable time, and acts on nothing a chat sends after the end of a turn, whatever the
chat does to the chunks it already yielded. Scripted chats; the tools are the real ones on
a copy of sample_repo/.
"""

from agent_loop import (
    INCOMPLETE_MODEL_TURN,
    MODEL_ERROR,
    MODEL_START,
    TASK,
    TEXT_DELTA,
    TOOL_START,
    agent_events,
)
from repo_tools import RepoTools
from tests.helpers import HeldStream
from tests.ollama_test_server import call, chunk

# --- a stream the loop leaves is closed -----------------------------------------------------------


def test_loop_closes_a_stream_it_leaves_early(repo):
    # mutation loop_no_stream_close: drop `stream.close()` in _read_turn's finally.
    # (ScriptedChat's streams are generators, which CPython closes on garbage collection,
    # so a check of ScriptedChat.closed cannot see a missing close; a HeldStream can.)
    streams = []

    def chat(messages, tools):
        streams.append(HeldStream([chunk("a"), chunk("b"), chunk("c", done=True)]))
        return streams[-1]

    events = agent_events(chat, RepoTools(repo), TASK)
    assert next(events)["type"] == MODEL_START
    assert next(events)["type"] == TEXT_DELTA
    events.close()  # what record_run.py does on Ctrl-C
    assert streams[0].closed


# --- how long a cut turn took ---------------------------------------------------------------------


def test_a_turn_cut_off_in_no_measurable_time_still_says_its_seconds(repo):
    # mutation: `self.seconds is not None` read as truthiness dropped "seconds": 0.0, so a
    # recording said nothing of how long the cut-off turn took
    events = list(agent_events(lambda m, t: iter([chunk("half")]), RepoTools(repo), TASK,
                               clock=lambda: 7.0))  # fmt: skip
    assert events[-1] == {
        "type": "stopped", "turn": 1, "reason": INCOMPLETE_MODEL_TURN, "seconds": 0.0
    }  # fmt: skip


# --- nothing after the end of a turn --------------------------------------------------------------


def test_a_chat_that_empties_its_done_chunk_cannot_slip_a_call_in_after_the_end(repo):
    # mutation: `if final is not None` read as truthiness let a chat that empties the
    # chunk it yielded (the loop holds that very dict) send a call after the end, and it ran
    def chat(messages, tools):
        done = chunk("a", done=True)
        yield done
        done.clear()
        yield chunk(tool_calls=[call("run_tests")], done=True)

    events = list(agent_events(chat, RepoTools(repo), TASK))
    assert [e["type"] for e in events if e["type"] == TOOL_START] == []
    assert events[-1]["reason"] == MODEL_ERROR and "after" in events[-1]["error"], events[-1]
