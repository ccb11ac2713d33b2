"""local_model.py, the Ollama adapter, past test_loop.py's walk-through: it hangs up as soon
as the loop stops reading (so the server stops generating), turns whatever the SDK or the
server does into one ModelError, and finds its host as Ollama's own clients do. Against the
Ollama-protocol stand-in on 127.0.0.1, through the real `ollama` SDK.
"""

import gc
import threading

import pytest

from local_model import LocalModel, ModelError
from tests.helpers import STALL, wait_for
from tests.ollama_test_server import OllamaTestServer, chunk, reply
from tests.ollama_test_server import reply as ollama_reply

# --- hanging up: the server stops sending as soon as the loop stops reading -----------------------


def test_adapter_left_early_hangs_up_so_the_server_stops_sending():
    # What closing the stream is for: the server notices and stops generating.
    gate = threading.Event()
    lines = [chunk("a")] + [chunk("b")] * 500 + [chunk(done=True)]
    with OllamaTestServer([reply(*lines, gate=gate)]) as server:
        stream = LocalModel(host=server.host)([{"role": "user", "content": "hi"}], [])
        assert next(stream)["message"]["content"] == "a"
        stream.close()
        gate.set()  # the server now tries to send the other 501 lines
        wait_for(lambda: server.hung_up, seconds=5)
    assert server.hung_up == 1


def test_a_chunk_the_adapter_cannot_convert_hangs_up_at_once_not_at_garbage_collection():
    # An image that is not base64 passes the SDK's check of the chunk but fails when the
    # adapter converts it, in the adapter's own code, with the SDK's stream still open.
    # Its frame then lives on in the error's traceback (a cycle), so only the explicit
    # close ends the response at once; with the collector off, nothing else would.
    bad = chunk("x")
    bad["message"]["images"] = [{"value": "nope.png"}]
    gc.disable()
    try:
        with OllamaTestServer([reply(bad, drip=(" ", 0.02))]) as server:
            with pytest.raises(ModelError):
                list(LocalModel(host=server.host)([{"role": "user", "content": "hi"}], []))
            wait_for(lambda: server.hung_up, seconds=3)
            assert server.hung_up == 1
    finally:
        gc.enable()


# --- whatever fails is one ModelError; an odd answer is no answer, not a traceback ----------------


def test_a_request_the_sdk_refuses_before_any_stream_is_a_model_error():
    # The SDK checks the messages before it opens a stream: there is nothing to close yet,
    # and its refusal reaches the loop as a ModelError naming the field, like any other.
    with OllamaTestServer([reply(chunk("never sent", done=True))]) as server:
        with pytest.raises(ModelError, match="role"):
            list(LocalModel(host=server.host)([{"content": "a message without a role"}], []))
        assert server.chat_bodies() == []


def test_a_host_name_that_cannot_be_encoded_is_an_ollama_it_cannot_reach():
    # "a..b" fails IDNA encoding in the socket's address lookup, before any packet leaves: a
    # bare UnicodeError, a ValueError, once called "a response the SDK could not read"; from
    # 3.13 a UnicodeEncodeError, once called a conversation that is not valid Unicode
    with pytest.raises(ModelError) as refused:
        LocalModel(host="http://a..b:11434").describe()
    said = str(refused.value)
    assert said.startswith("cannot reach Ollama at http://a..b:11434: is `ollama serve` running")
    assert "idna" in said


def test_a_malformed_answer_with_one_problem_is_named_without_a_count_of_more():
    # mutation: `len(problems) > 1` -> `>=` added "(and 0 more problems)" to the one line
    import ollama
    import pydantic

    from local_model import _one_line

    for bad, line in (
        ({"model_info": {}, "capabilities": 5}, "capabilities: Input should be a valid list"),
        ({"capabilities": 5}, "model_info: Field required (and 1 more problems)"),
    ):
        with pytest.raises(pydantic.ValidationError) as error:
            ollama.ShowResponse.model_validate(bad)
        assert _one_line(error.value) == line


def test_odd_version_answer_is_no_version_not_a_traceback():
    with OllamaTestServer(version_answer=[1]) as server:
        info = LocalModel(host=server.host).describe()
    assert info["server_version"] is None


# --- the host, as Ollama's clients find it --------------------------------------------------------


def test_local_model_without_a_host_reads_ollama_host_as_ollamas_clients_do(monkeypatch):
    # mutation: `host or default_host()` without the fallback gave base_url(None), a crash,
    # for a learner who makes LocalModel() in their own script (the CLIs always pass a host).
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0")
    assert LocalModel().host == "http://0.0.0.0:11434"
    monkeypatch.delenv("OLLAMA_HOST")
    assert LocalModel().host == "http://127.0.0.1:11434"
    assert LocalModel(host="example.org:8000/x/").host == "http://example.org:8000/x"


# --- the read timeout -----------------------------------------------------------------------------


@pytest.mark.waits
def test_ollama_read_timeout_of_0_seconds_still_waits_for_the_server(repo):
    # subtle: a socket timeout of 0 means non-blocking, so a read would fail at once as a
    # cut connection; every wait gets the same floor (1 ms) as one the deadline capped, and
    # a server that sends nothing is reported as stalled.
    silent = ollama_reply(chunk("late"), chunk(done=True), pause_before=STALL)
    with OllamaTestServer([silent]) as server:
        chat = LocalModel(host=server.host, timeout=0)
        with pytest.raises(ModelError, match="sent nothing for 0 s"):
            list(chat([{"role": "user", "content": "hi"}], []))
