"""The live model a CLI talks to: built from its options, and checked before anything runs.

`open_model(args)` takes the options record_run.py and ask.py share (`--api`, `--model`,
`--host`, `--timeout`, `--max-tokens`, `--think`), builds the wire's adapter and asks the
server about the model first: is it up, is the model there, can it use tools, may it be
sent `think`. It returns the adapter and what the server said of the model, or raises
`ModelError` / `OpenAIModelError` saying what to do (`ValueError` for a `--host` that is
not a URL), so a missing server or model costs nothing.

Not here: the options' parsing and help (each CLI words them for its own job), the
deadline (each CLI starts it when its own budget starts), or printing anything.
"""

import os

from local_model import LocalModel
from openai_model import OpenAICompatibleModel
from plumbing.redact import keep_credentials_of


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
    return model, model.describe(args.think)  # refuses a model without tools; sets think
