"""local_model.py, the Ollama adapter, past test_loop.py's walk-through: it hangs up as soon
as the loop stops reading (so the server stops generating), turns whatever the SDK or the
server does into one ModelError, and finds its host as Ollama's own clients do. Against the
Ollama-protocol stand-in on 127.0.0.1, through the real `ollama` SDK.
"""

from local_model import LocalModel
from tests.ollama_test_server import OllamaTestServer


def test_odd_version_answer_is_no_version_not_a_traceback():
    with OllamaTestServer(version_answer=[1]) as server:
        info = LocalModel(host=server.host).describe()
    assert info["server_version"] is None
