"""The one sentence a failure of the wire becomes (plumbing/wire_errors.py): from its own
functions (both adapters' tables go through explain() and translated()), then through both
adapters against the stand-ins, for what the server actually did: an HTML page instead of
a stream, an event of the wrong shape, a request we could not encode (not the server's
fault)."""

import pytest

from agent_loop import MODEL_ERROR, TASK, agent_events
from local_model import LocalModel, ModelError
from openai_model import OpenAICompatibleModel, OpenAIModelError, chunks_from_events
from plumbing.wire_errors import explain, with_scheme
from repo_tools import RepoTools
from tests.ollama_test_server import OllamaTestServer
from tests.ollama_test_server import reply as ollama_reply
from tests.openai_test_server import TEST_MODEL, OpenAITestServer, event, finish, tool_call
from tests.openai_test_server import reply as openai_reply

TABLE = ((ConnectionError, "cannot reach {host} ({detail})"), (OSError, "wire: {detail}"))


def test_a_bare_host_gets_http_and_a_url_is_kept():
    # OLLAMA_HOST is often written "host:port"; a URL with any scheme stays as it is.
    assert with_scheme("127.0.0.1:11434") == "http://127.0.0.1:11434"
    assert with_scheme("https://example.invalid:1") == "https://example.invalid:1"


def test_the_first_matching_row_explains_and_an_unknown_error_names_itself():
    refused = ConnectionRefusedError("refused")  # a ConnectionError and an OSError: row 1
    assert explain(refused, TABLE, host="h") == "cannot reach h (refused)"
    assert explain(OSError("cut"), TABLE, host="h") == "wire: cut"
    assert explain(KeyError("x"), TABLE, host="h") == "KeyError: 'x'"


# --- through the adapters, against the stand-ins: what actually happened --------------------------


def test_a_request_we_cannot_encode_is_not_blamed_on_the_server():
    with OllamaTestServer([]) as server:
        model = LocalModel(host=server.host)
        messages = [{"role": "user", "content": "list \udcff.py"}]  # a non-UTF-8 file name
        with pytest.raises(ModelError) as raised:
            list(model(messages, []))
    assert "could not be encoded" in str(raised.value)
    assert "sent a response" not in str(raised.value)


def test_ollama_html_page_is_not_a_stream(repo):
    page = ollama_reply(b"<html><body>proxy login</body></html>\n", content_type="text/html")
    with OllamaTestServer([page]) as server:
        events = list(agent_events(LocalModel(host=server.host), RepoTools(repo), TASK))
    assert events[-1]["reason"] == MODEL_ERROR
    assert "not a stream" in events[-1]["error"]


def test_openai_html_page_is_not_a_stream(repo):
    page = openai_reply("<html><body>proxy login</body></html>\n", content_type="text/html")
    with OpenAITestServer([page]) as server:
        chat = OpenAICompatibleModel(TEST_MODEL, server.base_url)
        events = list(agent_events(chat, RepoTools(repo), TASK))
    assert events[-1]["reason"] == MODEL_ERROR
    assert "not a stream" in events[-1]["error"]


def test_mixed_index_types_are_a_malformed_fragment():
    text_index = event({"tool_calls": [{"index": "1", "function": {"arguments": "{}"}}]})
    stream = [tool_call(0, "{}", name="read_file"), text_index, finish("tool_calls")]
    with pytest.raises(OpenAIModelError, match="wrong shape"):
        list(chunks_from_events(stream))
