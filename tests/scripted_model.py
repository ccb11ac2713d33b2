"""A scripted stand-in for a model: the `chat(messages, tools)` callable, from a fixed script.

Each entry of the script answers one request: a list of chunk dicts (Ollama's stream shape),
in which an Exception instance is raised at that point instead of yielded. The stand-in
keeps what a test needs to check: the messages of every request (as passed), how many
chunks were handed out, and whether each stream was closed.

Not a model: nothing here decides anything. Chunks written for it are labelled scripted.
"""


class ScriptExhausted(Exception):
    """The loop asked for more model calls than the script holds."""


class ScriptedChat:
    def __init__(self, script):
        self.script = list(script)
        self.requests = []  # the messages list of each request, exactly as passed to chat
        self.tools = []  # the tool schemas of each request
        self.handed_out = 0  # chunks yielded so far, over all requests
        self.closed = []  # per request: was its stream closed (or fully consumed)?

    def __call__(self, messages, tools):
        self.requests.append(messages)
        self.tools.append(tools)
        number = len(self.requests) - 1
        if number >= len(self.script):
            raise ScriptExhausted(f"model call {number + 1} was not scripted")
        self.closed.append(False)
        return self._stream(number)

    def _stream(self, number):
        try:
            for item in self.script[number]:
                if isinstance(item, BaseException):
                    raise item
                self.handed_out += 1
                yield item
        finally:
            self.closed[number] = True
