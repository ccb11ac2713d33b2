"""The exit codes of the lab's programs, defined and documented here only.

The same five codes for every program, as `diff` and `grep` use the first three: 0 the
program did what was asked and the answer is yes, 1 it did and the answer is no, 2 it could
not (a usage or set-up error, input it cannot read), each with one `error:` line. 130 and
141 are the shell's numbers for a process ended by SIGINT and SIGPIPE (128 + the signal).

code  name              what it means, program by program
0     EXIT_OK           record_run.py: the independent final tests pass (every test of the
                          unchanged test file ran and passed; an exit code of 0 alone is not
                          a pass); for an impossible --task, the conflict was flagged; with
                          --attempts N, every attempt passed
                        replay.py: every recording reproduces
                        ask.py: the model answered the one question; a session ended
                          (`exit`, Ctrl-D)
                        compare.py: every file was read and compared (and with --html every
                          page written)
                        view.py: every page was written
                        lab.py: the job's own code, whatever it is, for every code below too
1     EXIT_NO           record_run.py: the final tests fail or did not run; for an impossible
                          --task, cheated, failed or unjudged; with --attempts N, at least
                          one attempt did not pass
                        replay.py: at least one recording diverges
                        ask.py: the loop stopped without an answer (max_turns,
                          empty_response, incomplete_model_turn, deadline)
2     EXIT_ERROR        record_run.py: a set-up error (server down, model missing or unable
                          to use tools, the output exists, a fork that cannot be made, as
                          root nothing to isolate the tests without --no-isolate)
                        replay.py: at least one recording cannot be replayed (not a
                          recording, the sample changed), or none was found; the highest of
                          0, 1 and 2 applies
                        ask.py: a usage error; the server or the model cannot be used; the
                          model failed mid-answer (model_error)
                        compare.py: a file is not a recording, a page was not written, or
                          the --html folder cannot be made
                        view.py: a recording could not be read or a page not written
                        lab.py: an unknown job or a failed set-up of .venv/
                        record_run.py, replay.py and ask.py: .venv/ changed since lab.py
                          built it (plumbing/installed_files.py)
130   EXIT_INTERRUPTED  every program: Ctrl-C, said in one line and without a traceback
                          (record_run.py saves what ran and says where; in an ask.py
                          session Ctrl-C cancels the answer only; lab.py leaves the line to
                          the program it runs); `lab.py model` takes SIGTERM as Ctrl-C too
141   EXIT_CLOSED_PIPE  every program: its stdout was closed before it finished (`| head`):
                          it stops, silently, where a write finds out (a run's lines are
                          written as they happen, compare.py's and view.py's at the end, so
                          their pages are still written); only with PYTHONUNBUFFERED set
                          does argparse's --help swallow the failed write and exit 0

`run_program(main)` is every program's `if __name__ == "__main__":`: it exits with what
`main()` returns, and turns Ctrl-C and a closed stdout into the last two codes.

Not here: deciding a program's code (each program does), or Ctrl-C while a program is still
importing (plumbing/quiet_interrupt.py, with EXIT_INTERRUPTED).
"""

import os
import sys

EXIT_OK, EXIT_NO, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE
# The end of every program's `exit codes:` line in its --help.
EVERY_PROGRAM = "130 on Ctrl-C; 141 when stdout is closed early (`| head`)"


def run_program(main, *args, interrupted="interrupted"):
    """Exit with `main(*args)`'s code; on Ctrl-C say `interrupted` on stderr (None: nothing)
    and exit 130, on a closed stdout exit 141; never a traceback for either."""
    try:
        try:
            code = main(*args)
        finally:
            # subtle: what is still buffered meets the closed pipe here, where it can be
            # caught, not in the interpreter's last flush, which prints a traceback
            sys.stdout.flush()
    except KeyboardInterrupt:
        if interrupted:
            print(f"\n{interrupted}", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except BrokenPipeError:
        # and the interpreter's last flush writes nowhere instead of failing again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_CLOSED_PIPE
    sys.exit(code)
