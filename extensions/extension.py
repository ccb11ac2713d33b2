"""What every extension says of itself, so that the composer (extensions/__init__.py) has no
line for any one of them; the run's `Log` of decisions; the one wrapper that counts calls.

An extension is a class. It wraps one of the three things the loop is given (`wraps`): its
`tools` (a hook, extensions/hooks.py), its `chat` (extensions/keep_results.py) or the loop
itself (extensions/one_shot.py). It declares the flag of record_run.py that turns it on,
checks the settings a recording gives it, and says which page of docs/ explains it. Each
of its decisions goes into the run's `Log`, numbered by the call it was about: the Nth
call the tools ran, which `Counted` counts, the outermost wrapper of the tools.

Not here: any one extension; the order they wrap in, and composing them (extensions/).
"""

from harness.decisions import FROM_CALL  # the setting each one takes (a fork's first call)
from plumbing.limits import is_whole


def acting_from(settings, since, had):
    """The settings of an extension on a fork whose first live call is the `since`th: it
    acts from there at the latest. One the parent `had` acts on the replayed calls as it
    did there (from its `from_call`, else 1); one only the fork turned on acts from `since`.

    subtle: never from a later call, whatever the parent says: a `from_call` past the
    fork point would let the live calls through untouched (an --approve asking nothing)."""
    first = min(settings.get(FROM_CALL, 1) if had else since, since)
    settings = {k: v for k, v in settings.items() if k != FROM_CALL}
    return {**settings, FROM_CALL: first} if first > 1 else settings


def recorded_problem(kinds, recording, had, at):
    """Why `recording` cannot have had the extensions it `had` ({name: settings}), or be
    forked at turn `at`, or None: each of `kinds` ({name: class}) checks its own settings,
    then its own rules; a name none of them has is refused."""
    for name, settings in had.items():
        if name not in kinds:
            return f"extension {name!r:.100} is not one this lab has"
        if kinds[name].settings_problem(settings):
            return kinds[name].settings_problem(settings)
    return next(filter(None, (kinds[name].recording_problem(recording, at) for name in had)), None)


class ExtensionError(Exception):
    """An extension that cannot start (an MCP server that does not answer): one line."""


class Log:
    """What a run's extensions decided, in order, and how many calls the tools have run
    (`calls`: counted by `Counted` alone, and read by every extension)."""

    def __init__(self):
        self.decisions, self.calls = [], 0


class Counted:
    """The tools, counting their calls into `log`. The composer puts it around every
    extension of the tools, so that all of them read one number.

    subtle: only the outermost wrapper may count: tests-after-edit runs `run_tests` itself,
    a call the hooks inside it see, and which is not one of the model's calls."""

    def __init__(self, tools, log):
        self.tools, self.log, self.root = tools, log, tools.root  # the copy they act on

    @property
    def schemas(self):
        return self.tools.schemas

    def invoke(self, name, arguments):
        self.log.calls += 1
        return self.tools.invoke(name, arguments)


class Extension:
    """The defaults of an extension; each one sets `name` and its flag, and says what differs."""

    name = ""  # as its flag, a recording and the terminal name it
    helps = ""  # what it does, in words, in the help of its flag
    page = "hooks"  # docs/PAGE.md explains it: the terminal says so when it is on
    wraps = "tools"  # or "chat", or "loop": what `wrapped` is given

    @staticmethod
    def flag(parser, kinds):
        """Add to record_run.py's `parser` the flag that turns on `kinds`, those that share
        it (each hook is a choice of --hook) in the composer's order; here a switch, --NAME."""
        (kind,) = kinds
        parser.add_argument(f"--{kind.name}", action="store_true", help=kind.helps)

    @classmethod
    def chosen(cls, args):
        """Its settings when record_run.py's `args` turn it on, else None."""
        return {} if getattr(args, cls.name.replace("-", "_")) else None

    @classmethod
    def check_options(cls, parser, args):
        """Refuse (`parser.error`, one line) the flags it cannot go with; most have none."""

    @classmethod
    def settings_problem(cls, settings):
        """Why the `settings` a recording gives it are not ones it takes, in words, or None."""
        if set(settings) <= {FROM_CALL} and all(is_whole(n, 1) for n in settings.values()):
            return None
        said = f"the settings of extension {cls.name!r} must be"
        return f'{said} {{}} or {{"from_call": N}}, N from 1'

    @classmethod
    def recording_problem(cls, recording, at):
        """Why `recording` cannot have had it (or be forked at turn `at`), or None."""
        return None

    @classmethod
    def wrapped(cls, inner, settings, extensions):
        """`inner` (what `wraps` names) inside one of these, with its `settings`; it keeps
        its decisions in `extensions.log` (the composer's, extensions/__init__.py)."""
        return cls(inner, extensions.log, settings.get(FROM_CALL, 1))

    @classmethod
    def shown(cls, settings):
        """How the terminal names it with its `settings` when it is on: `keep-results (keep 2)`."""
        return cls.name + "".join(f" ({k} {v})" for k, v in settings.items())

    @classmethod
    def started(cls, settings, extensions):
        """Before a live run: start what it needs (extensions.live[name]), and return its
        settings as the recording keeps them and the lines it says; ExtensionError: cannot."""
        return settings, []

    @classmethod
    def stopped(cls, extensions):
        """After a live run: end what `started` started."""

    @staticmethod
    def planned(plan, settings=None):
        """The driver's Plan for a run with it on (a harness/driver.Plan) and its `settings`:
        most keep it."""
        return plan

    @staticmethod
    def noted(event):
        """A line it says in the terminal after `event`, besides its decisions, or None."""
        return None
