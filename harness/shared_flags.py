"""The flags of the live model that record_run.py and ask.py share, each defined and worded once.

`model_flags` adds the flags of the model a program asks and of the loop's budget: `--api`,
`--model`, `--host`, `--think`, `--max-tokens`, with `sampling` also `--temperature` and
`--seed`, then `--max-turns`, `--timeout` and `--deadline`; `text_calls_flag` adds
`--text-calls`. After parsing, `checked` refuses what argparse cannot (`--think` with `--api
openai`) and fills in the default `--host` of the wire chosen. What the flags then do is
elsewhere: harness/live_model.py opens the model from them, agent_loop.py keeps the budget.

Not here: a program's own flags (its task, its output, its forks), the isolation flags
(plumbing/isolation.py's `isolation_flags`, which replay.py shares too, without importing
an adapter), its description and exit codes, or any check of the server: only what argparse
can say before anything runs.
"""

from harness.recording_format import APIS  # the wires a recording may name
from local_model import (
    DEFAULT_MODEL,
    MAX_TOKENS,
    OPTIONS,
    READ_TIMEOUT,
    THINK_CHOICES,
    default_host,
)
from openai_model import DEFAULT_BASE_URL, default_base_url
from plumbing.limits import positive_int, positive_seconds, sampling_seed, sampling_temperature


def model_flags(parser, max_turns, deadline, per="", sampling=False):
    """The live model's flags and the loop's budget: `max_turns` is --max-turns' default,
    `per` what one budget is for (" per question"), `deadline` what --deadline's budget
    covers and stops, in the program's words; `sampling` adds --temperature and --seed."""
    parser.add_argument(
        "--api",
        choices=APIS,
        default=APIS[0],
        help="the server's wire: Ollama's /api/chat, or OpenAI-compatible "
        "/chat/completions (default: %(default)s)",
    )
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model name (default: %(default)s)")
    parser.add_argument(
        "--host",
        default=None,
        help="server address (default for ollama: $OLLAMA_HOST, else "
        "http://127.0.0.1:11434; for openai: $OPENAI_BASE_URL, else "
        f"{DEFAULT_BASE_URL}, the API root ending in /v1)",
    )
    parser.add_argument(
        "--think",
        choices=THINK_CHOICES,
        default="auto",
        help="ollama only: auto sends think only to a model whose capabilities "
        "list `thinking`; off asks such a model not to think; on refuses a "
        "model without it (default: %(default)s)",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive_int,
        default=MAX_TOKENS,
        metavar="N",
        help="output budget of one model turn: Ollama's num_predict, OpenAI's "
        "max_tokens (default: %(default)s)",
    )
    if sampling:
        parser.add_argument(
            "--temperature",
            type=sampling_temperature,
            default=None,
            metavar="T",
            help="sampling temperature, 0 to 2 (default: "
            f"{OPTIONS['temperature']}: the most likely token each time, so "
            "attempts are near-copies; above 0 each attempt is a draw)",
        )
        parser.add_argument(
            "--seed",
            type=sampling_seed,
            default=OPTIONS["seed"],
            metavar="N",
            help="sampling seed (default: %(default)s)",
        )
    parser.add_argument(
        "--max-turns",
        type=positive_int,
        default=max_turns,
        help=f"model requests{per} at most (default: %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=READ_TIMEOUT,
        help=f"seconds to wait for the server's next bytes (default: {READ_TIMEOUT:g})",
    )
    parser.add_argument(
        "--deadline",
        type=positive_seconds,
        default=None,
        help=f"wall-clock budget in seconds of {deadline} (default: none)",
    )


def text_calls_flag(parser):
    parser.add_argument(
        "--text-calls",
        action="store_true",
        help="run a call the model wrote as text (the one JSON call of an offered tool in a "
        "complete turn, all that a ```json fence or a <tool_call> block ending its text holds) "
        "as if it had made it, send its result back as a user message, and say `written as "
        "text` where the call is shown (default: such a call is named when the loop stops, "
        "and never run)",
    )


def checked(parser, args):
    """`args` with --host filled in for its wire; a --think the OpenAI API cannot send is a
    usage error (parser.error exits)."""
    if args.api == "openai" and args.think != "auto":
        parser.error("--think applies to --api ollama; the OpenAI API has no standard switch")
    if args.host is None:
        args.host = default_host() if args.api == "ollama" else default_base_url()
    return args
