"""Small pieces of replay's transcript (harness/transcript.py), from its own functions."""

from harness.transcript import INDENT, block, chunk_lines


def test_an_empty_block_keeps_one_indented_line_and_blank_lines_stay_blank():
    # A tool result of "" still shows a line under its heading, and a blank line inside a
    # block gets no trailing spaces.
    assert block("") == [INDENT]
    assert block("a\n\nb", "> ") == ["> a", "", "> b"]


def test_a_turns_chunks_are_shown_as_they_came_text_beyond_ascii_included():
    calls = [[{"message": {"content": "é ✓"}}]]
    assert chunk_lines(1, calls) == [
        "--- turn 1: its 1 chunks, as the adapter handed them over ---",
        INDENT + '{"message": {"content": "é ✓"}}',
    ]
    assert chunk_lines(2, calls) == ["--- no turn 2 to show: this replay made 1 model call ---"]
