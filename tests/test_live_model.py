"""The live model's preflight (plumbing/live_model.py) when the learner's server is not the
one the options name: each error says the next step. With Ollama unreachable and an
OpenAI-compatible server answering at its default address, the error says `--api openai`
and a model that server lists; an Ollama name (name:tag) sent to a server that lists none
such says which wire it belongs to. Against the stand-ins on 127.0.0.1, through
record_run.py as a learner runs it."""

import os

import openai_model
from plumbing.live_model import OTHER_WIRE
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer
from tests.openai_test_server import OpenAITestServer

SERVED = "qwen2.5-coder-1.5b"  # as llama-server lists a model started with --alias


def record(tmp_path, *options, base_url):
    env = {**os.environ, "OPENAI_BASE_URL": base_url}
    return run_cli("record_run.py", *options, "--output", tmp_path / "run.json", env=env)


def test_ollama_unreachable_while_an_openai_server_answers_suggests_api_openai(
    tmp_path, unused_port
):
    with OpenAITestServer(models=(SERVED, "other")) as server:
        finished = record(
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
    finished = record(tmp_path, "--host", nowhere, base_url=f"{nowhere}/v1")
    assert finished.returncode == 2
    assert "cannot reach Ollama" in finished.stderr and "--api openai" not in finished.stderr


def test_an_ollama_that_answers_is_never_second_guessed(tmp_path):
    with OllamaTestServer(models=()) as ollama, OpenAITestServer(models=(SERVED,)) as other:
        finished = record(tmp_path, "--host", ollama.host, base_url=other.base_url)
        assert other.requests == []  # a missing model is Ollama's answer, not an absent server
    assert finished.returncode == 2
    assert "is not available at" in finished.stderr and "--api openai" not in finished.stderr


def test_an_ollama_name_sent_to_an_openai_server_says_which_wire_it_belongs_to(tmp_path):
    with OpenAITestServer(models=(SERVED,)) as server:
        options = ("--api", "openai", "--host", server.base_url, "--model", "qwen2.5-coder:1.5b")
        finished = record(tmp_path, *options, base_url=server.base_url)
    assert finished.returncode == 2
    assert f"which lists: {SERVED}" in finished.stderr
    assert openai_model.OLLAMA_NAME.format(model="qwen2.5-coder:1.5b") in finished.stderr


def test_a_name_with_a_colon_is_not_called_ollamas_where_the_server_lists_such_names(tmp_path):
    with OpenAITestServer(models=("gemma4:e2b",)) as server:  # Ollama's own /v1, say
        options = ("--api", "openai", "--host", server.base_url, "--model", "qwen2.5-coder:1.5b")
        finished = record(tmp_path, *options, base_url=server.base_url)
    assert finished.returncode == 2
    assert "which lists: gemma4:e2b" in finished.stderr and "Ollama names" not in finished.stderr
