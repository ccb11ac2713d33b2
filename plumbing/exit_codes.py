"""The exit codes of the lab's programs, defined and documented here only.

The same four codes for every program, as `diff` and `grep` use the first three: 0 the
program did what was asked and the answer is yes, 1 it did and the answer is no, 2 it could
not (a usage or set-up error, input it cannot read), each with one `error:` line. 130 is
the shell's number for a process ended by SIGINT (128 + the signal).

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
                          to use tools, the output exists, a fork that cannot be made)
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
130   EXIT_INTERRUPTED  record_run.py, replay.py, ask.py, lab.py: Ctrl-C, without a traceback
                          (record_run.py saves what ran; in an ask.py session, Ctrl-C
                          cancels the answer only)

Not here: deciding a program's code (each program does), or Ctrl-C while a program is still
importing (plumbing/quiet_interrupt.py, with EXIT_INTERRUPTED).
"""

EXIT_OK, EXIT_NO, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT
