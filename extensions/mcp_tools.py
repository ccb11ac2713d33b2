"""`--mcp "COMMAND ARGS"` (repeatable): the tools of an MCP server, offered beside the lab's.

Every agent reads tools from Model Context Protocol servers the same way: start the server,
`initialize`, `tools/list`, and offer each tool renamed with the server's name (pi's
`mcp_<server>_<tool>`, Claude Code's `mcp__server__tool`); here `SERVER__TOOL`. Before the
run, each server is started (plumbing/mcp_client.py) and its tools kept in the settings the
recording keeps; one that does not start, answers late or offers tools that cannot be
offered (plumbing/mcp_offer.py) stops the program in one line. A call is checked against
the tool's schema, sent with a deadline, bounded and redacted; an error is its result.

Decision: one per call, `called`, `refused` (arguments that do not fit) or `failed` (the
server's error, a deadline, a server that ended), keeping the result the model read
(`result`): a replay answers from it and needs no server. --approve asks before each call
(extensions/permissions.py); --plan offers none.

Not here: resources, prompts, servers over HTTP, a fork of a run with MCP tools.
"""

import atexit

from extensions.extension import ExtensionError
from extensions.hooks import Hook
from harness.decisions import MCP, MCP_RESULT
from harness.recording_format import FORMAT
from plumbing import mcp_offer
from plumbing.limits import Deadline
from plumbing.redact import redact

CALL_SECONDS = 30.0  # one call's deadline (the run's, when it comes first)


class McpTools(Hook):
    name, page = MCP, "mcp"
    helps = ("start an MCP server over stdio ('COMMAND ARGS', repeatable) and offer each of "
             "its tools as SERVER__TOOL beside the lab's; each call checked against its schema, "
             f"bounded and given {CALL_SECONDS:g} s; kept in the recording, so replay needs no "
             "server (docs/mcp.md) (default: none)")  # fmt: skip

    @staticmethod
    def flag(parser, kinds):
        parser.add_argument("--mcp", action="append", default=[], metavar="'COMMAND ARGS'",
                            help=McpTools.helps)  # fmt: skip

    @classmethod
    def chosen(cls, args):
        return {"servers": [{"command": command} for command in args.mcp]} if args.mcp else None

    @classmethod
    def check_options(cls, parser, args):
        if len(args.mcp) > mcp_offer.SERVERS_LIMIT:
            parser.error(f"--mcp: at most {mcp_offer.SERVERS_LIMIT} servers")
        if args.mcp and args.fork is not None:
            parser.error("--mcp cannot go with --fork: a run with MCP tools is not forked yet")

    @classmethod
    def settings_problem(cls, settings):
        return mcp_offer.settings_problem(settings)

    @classmethod
    def shown(cls, settings):  # its servers by name: their tools are said before the run
        return f"{cls.name} ({', '.join(s['name'] for s in settings['servers'])})"

    @classmethod
    def recording_problem(cls, recording, at):
        if at is not None or recording.get("fork"):
            return "a run with MCP tools is no fork and cannot be forked (docs/mcp.md)"
        if recording["format"] != FORMAT:
            return f"format {recording['format']!r} cannot hold MCP results"
        return None

    @classmethod
    def started(cls, settings, extensions):
        """Start each server; the settings with its name and tools; a line for each."""
        from plumbing.mcp_client import McpError, McpServer  # the SDK's side: live runs only

        servers, lines = extensions.live.setdefault(MCP, {}), []
        for given in settings["servers"]:
            try:
                server = McpServer(given["command"])
            except McpError as error:
                raise ExtensionError(str(error)) from None
            atexit.register(server.close)  # closing twice is harmless
            problem = mcp_offer.offer_problem(server.name, server.tools, servers)
            if problem:
                server.close()
                raise ExtensionError(f"{server}: {problem}")
            servers[server.name] = server
            names = ", ".join(t["name"] for t in server.tools)[:200]
            size = mcp_offer.schema_size(server.name, server.tools)
            lines.append(f"MCP server {server.name}: {len(server.tools)} tools ({names}), "
                         f"{size:,} characters of schema in every request")  # fmt: skip
        kept = [{"command": s.command, "name": n, "tools": s.tools} for n, s in servers.items()]
        return {"servers": kept}, lines

    @classmethod
    def stopped(cls, extensions):
        for server in extensions.live.pop(MCP, {}).values():
            server.close()

    @classmethod
    def wrapped(cls, tools, settings, extensions):
        recorded = {d["call"]: d for d in extensions.applied if d["extension"] == MCP}
        return cls(tools, extensions.log, settings, extensions.live.get(MCP), recorded)

    def __init__(self, tools, log, settings, servers, recorded):
        super().__init__(tools, log)
        self.servers, self.recorded = servers, recorded  # live, or a replay's answers
        given = settings["servers"]
        self.offered = {f"{s['name']}{mcp_offer.SEPARATOR}{t['name']}": (s["name"], t)
                        for s in given for t in s["tools"]}  # fmt: skip
        self.added = [f for s in given for f in mcp_offer.schemas(s["name"], s["tools"])]
        self.deadline = getattr(tools, "deadline", None) or Deadline(None)

    @property
    def schemas(self):
        return [*self.tools.schemas, *self.added]

    def around(self, name, arguments, call):
        if name not in self.offered:
            return call()
        server, tool = self.offered[name]
        if self.servers is None:  # a replay: what the recorded call returned
            kept = self.recorded.get(self.log.calls)
            result = kept[MCP_RESULT] if kept else {"error": "no result of this call was recorded"}
            word, said = (kept["decision"], kept["said"]) if kept else ("failed", "not recorded")
        else:  # checked against its schema, then sent (plumbing/mcp_client.py)
            seconds = self.deadline.cap(CALL_SECONDS)
            try:
                word, said, result = self.servers[server].asked(tool, arguments, seconds)
            except Exception as error:  # the lab's own failure: still a result to keep
                said = f"{type(error).__name__}: {error}"[:200]
                word, result = "failed", {"error": f"the call failed ({said})"}
        result = redact(result)  # what the recording keeps is what the model read
        self.decide(word, said, **{MCP_RESULT: result})
        return result
