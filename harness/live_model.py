"""The live model a CLI talks to: built from its options, and checked before anything runs.

`open_model(args)` takes the options record_run.py and ask.py share (`--api`, `--model`,
`--host`, `--timeout`, `--max-tokens`, `--think`), builds the wire's adapter and asks the
server about the model first: is it up, is the model there, can it use tools, may it be
sent `think`. It returns the adapter and what the server said of the model, or raises
`ModelError` / `OpenAIModelError` saying what to do (`ValueError` for a `--host` that is
not a URL), so a missing server or model costs nothing.

Not here: the options' parsing and help (harness/shared_flags.py, for both CLIs), the
deadline (each CLI starts it when its own budget starts), or printing anything.
"""

import os
import shlex
import threading
from urllib.parse import urlsplit

import httpx

from local_model import LocalModel, ModelError
from openai_model import OpenAICompatibleModel, OpenAIModelError, default_base_url
from plumbing.limits import Deadline, DeadlineExceeded
from plumbing.redact import keep_credentials_of
from plumbing.wire_errors import with_scheme

PROBE_SECONDS = 2  # the most a refused Ollama waits to look for an OpenAI-compatible server
LOOPBACK = ("127.0.0.1", "localhost", "::1")  # the addresses asked: this machine's own
OTHER_WIRE = (
    " An OpenAI-compatible server answers at {base_url} (it lists {listed}): "
    "to use it, add --api openai --model {first}"
)


def open_model(args):
    """(adapter, the server's description of the model), checked; see the module docstring."""
    keep_credentials_of(args.host)  # a user and password in the address are never shown or saved
    # record_run.py's --temperature and --seed; ask.py has neither, and keeps the defaults
    sampling = {name: getattr(args, name, None) for name in ("temperature", "seed")}
    if args.api == "openai":
        key = os.environ.get("OPENAI_API_KEY")  # sent to servers started with one, never shown
        model = OpenAICompatibleModel(
            args.model, args.host, key, args.timeout, max_tokens=args.max_tokens, **sampling
        )
        return model, model.describe()
    model = LocalModel(args.model, args.host, args.timeout, max_tokens=args.max_tokens, **sampling)
    try:
        return model, model.describe(args.think)  # refuses a model without tools; sets think
    except ModelError as error:
        # the SDK's refused connection: httpx's, or its own ConnectionError (not a message read)
        if not isinstance(error.__cause__, (httpx.ConnectError, ConnectionError)):
            raise
        raise ModelError(f"{error}{_other_wire()}") from error


def _other_wire():
    """What to add when Ollama is not there but an OpenAI-compatible server answers at its
    default address (`$OPENAI_BASE_URL`, else llama-server's) on this machine; else nothing.

    subtle: asked without `$OPENAI_API_KEY` (an address the user never named must not get a
    key), only on a loopback address (no cloud request, no name lookup), and for at most
    PROBE_SECONDS in all: a server that sends its answer a byte at a time is left behind."""
    base_url = default_base_url()
    if urlsplit(with_scheme(base_url)).hostname not in LOOPBACK:
        return ""
    found = []

    def probe():
        model = OpenAICompatibleModel(
            "", base_url, None, PROBE_SECONDS, deadline=Deadline(PROBE_SECONDS)
        )
        found.append(list(model.served()))

    asking = threading.Thread(target=_quietly, args=(probe,), daemon=True)
    asking.start()
    asking.join(PROBE_SECONDS)
    if not found:  # nothing answers there as such a server, or not in time
        return ""
    listed = found[0]
    names = [name[:100] for name in listed[:5]]  # what any server sends, bounded
    shown = ", ".join(names) + (", ..." if len(listed) > 5 else "")
    first = shlex.quote(names[0]) if names else "NAME"  # pasted into a shell as it is shown
    return OTHER_WIRE.format(base_url=base_url, listed=shown or "no models", first=first)


def _quietly(probe):
    try:
        probe()
    except (OpenAIModelError, DeadlineExceeded, ValueError, OSError):
        pass  # not such a server: nothing to suggest
