"""One reader of Markdown fences (plumbing/fenced_blocks.py, CommonMark's rule) for both of
its uses: the one-shot answer's block (extensions/one_shot.py) and the calls a model wrote as
text (plumbing/text_calls.py). Each case below is one where a reader of its own for each use
could tell another story (indentation, the info string, tildes): both uses read it alike.

The one-shot writes the block on a real copy of sample_repo/; text_calls looks for a call
alone in a fence, which counts only when a closed fence holds it and nothing else.
"""

import pytest

from agent_loop import AgentLoop
from extensions.extension import Log
from extensions.one_shot import TASK, OneShot
from plumbing.fenced_blocks import Fence, blocks, fences
from plumbing.sample import SOURCE_FILE
from plumbing.text_calls import runnable_call, text_tool_call
from repo_tools import RepoTools

CALL = '{"name": "run_tests"}'  # a call only when all that a closed fence holds
FOUND = {"name": "run_tests", "arguments": {}}

# (the text, with X where the held line goes; what the one fence holds, None if none)
READ_THE_SAME = {
    # the info string is the rest of the line; its first word is the language
    "an-info-string-of-two-words": ("```json title\nX\n```\n", "X\n"),
    # up to three spaces before a fence; each held line loses as many as the opening had
    "indented-one-space": (" ```\nX\n ```\n", "X\n"),
    "indented-three-spaces": ("   ```\nX\n   ```\n", "X\n"),
    "indented-lines-come-out-unindented": ("  ```\n  X\n  ```\n", "X\n"),
    "a-closing-fence-indented-on-its-own": ("```\nX\n   ```\n", "X\n"),
    # four spaces or a tab make indented code, not a fence; so does any other space
    "indented-four-spaces": ("    ```\nX\n    ```\n", None),
    "indented-by-a-tab": ("\t```\nX\n\t```\n", None),
    "a-closing-fence-indented-four-spaces": ("```\nX\n    ```\n", None),  # never closed
    "indented-by-an-ideographic-space": ("\u3000```\nX\n\u3000```\n", None),
    # tildes fence as backticks do, and each closes only its own kind
    "tildes": ("~~~\nX\n~~~\n", "X\n"),
    "tildes-with-a-backtick-in-the-info": ("~~~a`b\nX\n~~~\n", "X\n"),
    "backticks-inside-tildes-are-held": ("~~~\n```\nX\n```\n~~~\n", "```\nX\n```\n"),
}


@pytest.mark.parametrize("text, held", READ_THE_SAME.values(), ids=READ_THE_SAME)
def test_the_one_shot_writes_what_the_fence_holds(repo, text, held):
    log = Log()
    before = (repo / SOURCE_FILE).read_text()
    OneShot(AgentLoop, log, None, RepoTools(repo), TASK).take(
        "Here:\n" + text.replace("X", "Y = 1")
    )
    [decision] = log.decisions
    if held is None:
        assert decision["decision"] == "no-block"
        assert (repo / SOURCE_FILE).read_text() == before
    else:
        assert decision["decision"] == "written"
        assert (repo / SOURCE_FILE).read_text() == held.replace("X", "Y = 1")


@pytest.mark.parametrize("text, held", READ_THE_SAME.values(), ids=READ_THE_SAME)
def test_text_calls_find_a_call_alone_in_the_same_fences(text, held):
    written = "I will run them.\n" + text.replace("X", CALL)
    alone = held is not None and held.strip() == "X"
    assert text_tool_call(written, RepoTools.schemas) == (FOUND if alone else None)


def test_the_first_line_of_a_message_is_read_as_written_not_stripped():
    # the message's first line indented four spaces is indented code for both uses
    text = '    ```json\n{"name": "run_tests", "arguments": {}}\n```'
    assert blocks(text) == [] and runnable_call(text, RepoTools.schemas) is None
    assert runnable_call(text[1:], RepoTools.schemas) == FOUND  # three spaces: a fence
    assert blocks(text[1:]) == ['{"name": "run_tests", "arguments": {}}\n']


@pytest.mark.parametrize(
    "fence",
    ["~~~json", "```json title", "   ```json"],
    ids=["tildes", "an-info-string-of-two-words", "indented-three-spaces"],
)
def test_a_call_in_any_json_fence_at_the_end_is_the_action(fence):
    closing = fence.split("json")[0]
    text = f'Running them.\n{fence}\n{{"name": "run_tests", "arguments": {{}}}}\n{closing}'
    assert runnable_call(text, RepoTools.schemas) == FOUND


def test_a_tool_code_block_indented_is_read_unindented():
    text = "  ```tool_code\n  x = 1\n  run_tests()\n  ```"
    assert text_tool_call(text, RepoTools.schemas) == FOUND


def test_a_tool_code_block_of_tildes_ends_at_its_own_run_of_three():
    # closed on the line of its code, so never closed: the code ends where ~~~ starts
    assert text_tool_call("~~~tool_code\nrun_tests()~~~", RepoTools.schemas) == FOUND


def test_fewer_than_three_backticks_or_tildes_make_no_fence():
    assert blocks("``\nx\n``\n~~\ny\n~~\n") == []
    assert blocks("```\nx\n``\n```\n") == ["x\n``\n"]  # nor close one


def test_each_fence_says_where_it_is_and_how_it_opened():
    text = "a\n  ~~~~py extra\n  x\n   ~~~~~\n```\nopen"
    closed, never = fences(text)
    assert closed == Fence("~", 4, 2, "py extra", body=17, stop=21, end=29, closed=True)
    assert (closed.language, text[closed.body : closed.stop]) == ("py", "  x\n")
    # one never closed holds the rest of the text
    assert never == Fence("`", 3, 0, "", body=34, stop=38, end=38, closed=False)
    assert never.language == "" and text[never.body :] == "open"
    # an opening fence on the text's last line holds nothing, from the text's end
    assert list(fences("```")) == [Fence("`", 3, 0, "", body=3, stop=3, end=3, closed=False)]
