"""The guard between a model's tool request and the code that runs it.

A model asks for tools by name, with arguments it wrote itself. This module turns every
way such a request can be wrong (an unknown name, arguments that are not an object or not
valid JSON, missing, extra or wrongly typed parameters, a tool that fails) into a result
`{"error": "..."}` that tells the model what to fix: the model can read an error and try
again, while an exception would end the conversation. `ToolBox` is the small base that
`RepoTools` and `ReadOnlyTools` share: a fixed table from tool name to method, so a
model-chosen name is never used to look up an arbitrary attribute.

Not here: what any tool does. Only strings are checked, because every parameter these
lab tools take is a string.
"""

import json

from plumbing.redact import redact


class ToolError(Exception):
    """A tool could not do what was asked; the message is written for the model."""


def function_schema(name, description, parameters):
    """One function schema in the shape Ollama and OpenAI-compatible servers accept.

    `parameters` maps each (required, string) parameter name to its description.
    """
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    key: {"type": "string", "description": text} for key, text in parameters.items()
                },
                "required": list(parameters),
                "additionalProperties": False,
            },
        },
    }


def checked_arguments(schema, arguments):
    """Return `arguments` as a dict that fits `schema`, or raise ToolError saying why."""
    name = schema["function"]["name"]
    parameters = schema["function"]["parameters"]
    if isinstance(arguments, str):
        # OpenAI-compatible servers send arguments as JSON text; a model can get it wrong.
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as error:
            raise ToolError(
                f"the arguments of {name} are not valid JSON ({error.msg} at "
                f"position {error.pos}); resend the call with corrected JSON arguments"
            ) from None
    if not isinstance(arguments, dict):
        raise ToolError(
            f"the arguments of {name} must be a JSON object, got "
            f"{type(arguments).__name__}; resend the call with an object of parameters"
        )
    expected = parameters["properties"]
    missing = [key for key in parameters["required"] if key not in arguments]
    extra = sorted(key for key in arguments if key not in expected)
    wrong = [key for key in expected if key in arguments and not isinstance(arguments[key], str)]
    problems = []
    if missing:
        problems.append(f"missing parameter(s): {', '.join(missing)}")
    if extra:
        problems.append(f"unexpected parameter(s): {', '.join(extra)}")
    if wrong:
        problems.append(f"parameter(s) that must be strings: {', '.join(wrong)}")
    if problems:
        accepted = ", ".join(expected) or "no parameters"
        raise ToolError(f"{name} was called with {'; '.join(problems)}. It takes: {accepted}")
    return arguments


class ToolBox:
    """Base for a set of tools: `schemas` for the model, `invoke` for the loop.

    A subclass sets `schemas` and returns its name -> method table from `handlers()`.
    """

    schemas = []

    def handlers(self):
        raise NotImplementedError

    def invoke(self, name, arguments):
        """`_invoke`, with the harness's secrets redacted: every tool result passes here."""
        return redact(self._invoke(name, arguments))

    def _invoke(self, name, arguments):
        """Run one requested call; always return a JSON-ready dict, never raise an Exception."""
        table = self.handlers()
        offered = ", ".join(schema["function"]["name"] for schema in self.schemas)
        if not isinstance(name, str) or name not in table:
            shown = json.dumps(name) if name is not None else "a call without a name"
            return {"error": f"unknown tool {shown}; the offered tools are: {offered}"}
        schema = next(s for s in self.schemas if s["function"]["name"] == name)
        try:
            return table[name](**checked_arguments(schema, arguments))
        except ToolError as error:
            return {"error": str(error)}
        except OSError as error:
            # The file system refused (a directory where a file was, no permission, a name
            # too long): the model can read that; an exception would end the conversation.
            return {"error": f"{name} failed: {error.strerror or error}"}
        except Exception as error:
            # subtle: a tool's bug or a hostile argument (a pattern that overflows, a name
            # that cannot be encoded) must not end the run; the model reads what happened.
            # The text is made UTF-8-safe: a message may quote a lone surrogate.
            text = f"{name} failed: {type(error).__name__}: {error}"
            return {"error": text.encode("utf-8", "backslashreplace").decode("utf-8")}
