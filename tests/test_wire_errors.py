"""The one sentence a failure of the wire becomes (plumbing/wire_errors.py), from its own
functions: both adapters' tables go through explain() and translated()."""

from plumbing.limits import Deadline, DeadlineExceeded
from plumbing.wire_errors import explain, translated, with_scheme

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


def test_a_failure_within_50_ms_of_the_deadline_is_the_deadline():
    # A wait that failed this close to the end ran into it: the loop stops with `deadline`,
    # not with a wire error the deadline caused; further from it, the adapter's failure.
    now = [100.0]
    deadline = Deadline(10, clock=lambda: now[0])
    failure = RuntimeError("the adapter's")
    now[0] = 109.9
    assert translated(OSError(), deadline, failure) is failure
    assert isinstance(translated(OSError(), deadline, failure, cut=True), DeadlineExceeded)
    now[0] = 109.96
    assert isinstance(translated(OSError(), deadline, failure), DeadlineExceeded)
    now[0] = 109.94
    assert translated(OSError(), deadline, failure) is failure
