"""record_run.py's --temperature and --seed: what each wire is sent, what the recording
keeps, and the seed of each attempt of a series, so that attempts above temperature 0 are
independent draws rather than near-copies. Against the stand-in servers; the chunks are
written by hand.
"""

import pytest

from harness.recording import load
from tests import ollama_test_server as ollama
from tests import openai_test_server as openai
from tests.in_process import run_cli

ANSWER = "The split ignores backslashes."


def test_ollama_is_sent_the_temperature_and_seed_given_and_the_recording_keeps_them(tmp_path):
    script = [ollama.reply(ollama.chunk(ANSWER), ollama.chunk(done=True))]
    with ollama.OllamaTestServer(script) as stand_in:
        options = ["--host", stand_in.host, "--output", tmp_path / "r.json"]
        finished = run_cli("record_run.py", *options, "--temperature", "0.7", "--seed", "11")
        body = stand_in.chat_bodies()[0]
    assert finished.returncode == 1, finished.stderr  # a final message alone repairs nothing
    assert body["options"]["temperature"] == 0.7 and body["options"]["seed"] == 11
    assert body["options"]["num_predict"] == 2048  # the rest as before
    options = load(tmp_path / "r.json")["model"]["options"]
    assert options["temperature"] == 0.7 and options["seed"] == 11


def test_the_openai_wire_is_sent_them_too_and_keeps_its_defaults_otherwise(tmp_path):
    said = openai.reply(openai.content(ANSWER), openai.finish())
    with openai.OpenAITestServer([said, said]) as stand_in:
        wire = ["--api", "openai", "--model", openai.TEST_MODEL, "--host", stand_in.base_url]
        run_cli("record_run.py", *wire, "--output", tmp_path / "a.json", "--temperature", "1")
        run_cli("record_run.py", *wire, "--output", tmp_path / "b.json")
        given, default = stand_in.chat_bodies()
    assert (given["temperature"], given["seed"]) == (1.0, 7)
    assert (default["temperature"], default["seed"]) == (0, 7)


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--temperature", "-0.1"),
        ("--temperature", "2.5"),
        ("--temperature", "nan"),
        ("--temperature", "warm"),
        ("--seed", "-1"),
        ("--seed", str(2**31)),
        ("--seed", "1.5"),
    ],
)
def test_a_temperature_or_seed_out_of_range_is_refused_before_anything_runs(tmp_path, flag, value):
    output = tmp_path / "never.json"
    finished = run_cli("record_run.py", "--host", "http://127.0.0.1:9", flag, value,
                       "--output", output)  # fmt: skip
    assert finished.returncode == 2
    assert f"argument {flag}: " in finished.stderr and finished.stdout == ""
    assert not output.exists()


def test_the_seeds_at_both_ends_of_the_range_are_taken():
    # mutation: `not 0 <= value` -> `not 1 <= value` refused --seed 0
    from plumbing.limits import SAMPLING_SEEDS, sampling_seed

    assert sampling_seed("0") == 0 and sampling_seed(str(2**31 - 1)) == SAMPLING_SEEDS - 1


def test_each_attempt_of_a_series_is_sent_its_own_seed(tmp_path):
    # two conversations, told apart by their first words (ConversationServer)
    first = [ollama.reply(ollama.chunk("First: " + ANSWER), ollama.chunk(done=True))]
    second = [ollama.reply(ollama.chunk("Second: " + ANSWER), ollama.chunk(done=True))]
    with ollama.ConversationServer([first, second]) as stand_in:
        options = ["--host", stand_in.host, "--output", tmp_path / "s.json", "--attempts", "2"]
        finished = run_cli("record_run.py", *options, "--seed", "5", "--temperature", "0.8")
    assert finished.returncode == 1, finished.stdout + finished.stderr
    seeds = [load(tmp_path / f"s-{k}.json")["model"]["options"]["seed"] for k in (1, 2)]
    assert seeds == [5, 6]  # attempt k: --seed + k - 1
    assert {load(tmp_path / f"s-{k}.json")["model"]["options"]["temperature"] for k in (1, 2)} == {
        0.8
    }
