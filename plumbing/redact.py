"""Redaction: the harness's own secrets taken out of what a tool returns.

`redact(value)` returns `value` (text, or JSON-ready dicts and lists of it) with the value
of every secret-looking variable of the harness's environment replaced by `[redacted]`:
names containing KEY, TOKEN, SECRET or PASSWORD, and OPENAI_API_KEY and OLLAMA_API_KEY by
name, and the user and password written into a server address (`OLLAMA_HOST`,
`OPENAI_BASE_URL`, `--host`: `http://user:password@host`). Tool results pass through it
before they reach the conversation, the terminal or a recording, and so do the
independent test runs.

A second line of defence, not the first: it catches a value copied verbatim, not one the
edited code encoded (base64, reversed, split in two). Keeping the secrets out of the tests'
reach (a minimal environment, bubblewrap's PID namespace) is the real fix.
"""

import os
from urllib.parse import urlsplit

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
SECRET_NAMES = ("OPENAI_API_KEY", "OLLAMA_API_KEY")
# subtle: shorter values ("1", "true", "yes") would blank out ordinary words everywhere, and
# a secret that short is guessed faster than it is leaked.
SHORTEST_SECRET = 8
REDACTED = "[redacted]"
ADDRESS_NAMES = ("OLLAMA_HOST", "OPENAI_BASE_URL")  # addresses that may carry credentials
LEARNED = []  # credentials of addresses given at run time (--host), see keep_credentials_of


def credentials_of(address):
    """The secrets written into a server address: "user:password", and the password."""
    try:
        parts = urlsplit(address if "://" in address else f"http://{address}")
        username, password = parts.username, parts.password
    except ValueError:
        return []
    if not (username or password):
        return []
    found = [parts.netloc.rsplit("@", 1)[0]]  # the user and password as written
    return found + ([password] if password and len(password) >= SHORTEST_SECRET else [])


def keep_credentials_of(address):
    """Redact the user and password in `address` (a --host) from now on."""
    LEARNED.extend(credentials_of(address))


def secret_values(environ=None):
    """The values to redact, longest first (one secret may contain another)."""
    if environ is not None:
        return _secrets_in(environ)
    # subtle: the process's environment and LEARNED change at run time (a --host parsed
    # after start, a variable set by a test or by tests/in_process.py's runs), so the
    # secrets are found again whenever either differs from what they were found in: a
    # dict comparison of the bytes os.environ keeps (its `_data`, which every change made
    # through os.environ updates), about a fiftieth of the cost of finding them
    data, seen = os.environ._data, _FOUND_IN_THIS_PROCESS
    if seen[0] != data or seen[1] != LEARNED:
        seen[:] = [dict(data), list(LEARNED), _secrets_in(os.environ)]
    return list(seen[2])


_FOUND_IN_THIS_PROCESS = [None, None, []]  # os.environ's bytes, LEARNED, the secrets in them


def _secrets_in(environ):
    found = {
        value
        for name, value in environ.items()
        if (name in SECRET_NAMES or any(word in name.upper() for word in SECRET_WORDS))
        and len(value) >= SHORTEST_SECRET
    }
    for name in ADDRESS_NAMES:
        found.update(credentials_of(environ.get(name, "")))
    found.update(LEARNED)
    return sorted(found, key=len, reverse=True)


def redact(value, secrets=None):
    """`value` with every secret replaced by `[redacted]`, in text, dicts and lists alike."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {key: redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item, secrets) for item in value]
    return value
