"""`--hook syntax`: an edit that leaves path_rules.py unable to compile is undone.

SWE-agent's editing interface runs a linter on every edit: an edit that leaves a syntax
error is not applied, and the model is shown the error and the file as it still is
(Yang et al., 2024, "SWE-agent: Agent-Computer Interfaces Enable Automated Software
Engineering"). This hook does the same around `replace_text`: it keeps the file's bytes
before the call, lets the edit run, then compiles what it left (compile() of the source, as
an import would: nothing is imported or run). If that fails, the file is put back byte for
byte, and the model reads the SyntaxError with its line instead of "replaced". It keeps the
whole file or runs nothing: an edit of a file larger than SOURCE_LIMIT bytes (more than
replace_text edits, or the verdict reads) is not run at all.

Decisions: `kept` (it compiles; the result is the tool's, unchanged), `undone` (with the
error) or `declined` (the file is too large to keep; the edit was not run). Other calls,
and edits that did not land, pass through without a decision.
"""

from pathlib import Path

from extensions.hooks import Hook, landed
from plumbing.sample import SOURCE_FILE, SOURCE_LIMIT, read_regular_file, write_atomically

SHOWN = 200  # characters of the offending line given back to the model


class Syntax(Hook):
    name = "syntax"
    helps = (
        "an edit that leaves path_rules.py unable to compile is undone, and the model reads "
        "the SyntaxError"
    )

    def around(self, name, arguments, call):
        if name != "replace_text":
            return call()
        path = Path(self.root) / SOURCE_FILE
        before = read_regular_file(path, SOURCE_LIMIT)
        if len(before) > SOURCE_LIMIT:
            # subtle: the part read is not the file; put back, it would cut the file short
            # while the model reads "as it was". So the edit does not run.
            said = f"{SOURCE_FILE} is larger than {SOURCE_LIMIT:,} bytes: too large to keep whole"
            self.decide("declined", said)
            return {
                "error": f"Your edit was not run: {said}, and the syntax hook puts back the whole "
                "file when an edit does not compile. replace_text edits no file that large either."
            }
        result = call()
        if not landed(name, result):
            return result
        problem = compile_problem(read_regular_file(path, path.stat().st_size))
        if not problem:
            self.decide("kept", f"{SOURCE_FILE} compiles")
            return result
        write_atomically(path, before)  # the file as it was before this call, byte for byte
        self.decide("undone", problem)
        return {
            "error": f"Your edit was undone: {SOURCE_FILE} would not compile after it. "
            f"{problem}. The file is as it was before this call (the syntax hook keeps it "
            "valid Python); read it again and send an edit that compiles."
        }


def compile_problem(source):
    """Why the bytes `source` do not compile as a module, in one line; None when they do."""
    try:
        compile(source, SOURCE_FILE, "exec")  # this module has no __future__ flags to pass on
    except SyntaxError as error:  # IndentationError and TabError among them
        line = (error.text or "").strip()[:SHOWN]
        where = f" (line {error.lineno}: {line})" if error.lineno else ""
        return f"{type(error).__name__}: {error.msg}{where}"
    # a null byte (Python 3.10); nesting too deep for the compiler (RecursionError) or for
    # the parser's stack (MemoryError, with no text: said as what it is)
    except (ValueError, RecursionError, MemoryError) as error:
        return f"{type(error).__name__}: {str(error) or 'nested too deeply to compile'}"
    return None
