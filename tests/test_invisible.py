"""Characters that draw nothing are written out in the terminal, as control characters are:
zero-width and other format characters (Unicode category Cf), tag characters, and the
rest of what draws nothing (harness/console.py's `visible`, the terminal's one helper).

A recording, a model or a file name can hide text in them: a zero-width space makes two
names that look alike differ, and tag characters (U+E0020-U+E007F) spell a whole message
no terminal shows.
"""

import pytest

from harness.console import visible
from tests.helpers import altered
from tests.in_process import run_cli


def tagged(text):
    """`text` spelt in Unicode tag characters: invisible in a terminal."""
    return "\U000e0001" + "".join(chr(0xE0000 + ord(c)) for c in text) + "\U000e007f"


@pytest.mark.parametrize(
    "char, shown",
    [
        ("\u200b", "\\u200b"),  # zero-width space (Cf)
        ("\u200d", "\\u200d"),  # zero-width joiner (Cf)
        ("\u2060", "\\u2060"),  # word joiner (Cf)
        ("\ufeff", "\\ufeff"),  # zero-width no-break space, the byte-order mark (Cf)
        ("\u00ad", "\\xad"),  # soft hyphen (Cf)
        ("\u180e", "\\u180e"),  # Mongolian vowel separator (Cf)
        ("\U000e0041", "\\U000e0041"),  # tag letter A (Cf)
        ("\U000e0000", "\\U000e0000"),  # an unassigned code point among the tags (Cn)
        ("\U000e0100", "\\U000e0100"),  # variation selector 17: draws nothing (Mn)
        ("\ufe0f", "\\ufe0f"),  # variation selector 16 (Mn)
        ("\u3164", "\\u3164"),  # Hangul filler: a letter that draws nothing (Lo)
        ("\u034f", "\\u034f"),  # combining grapheme joiner (Mn)
        ("\u2028", "\\u2028"),  # line separator (Zl)
        ("\u2029", "\\u2029"),  # paragraph separator (Zp)
        ("\ue000", "\\ue000"),  # private use (Co)
        ("\u0378", "\\u0378"),  # unassigned (Cn)
        ("\udfff", "\\udfff"),  # a lone surrogate (Cs)
    ],
)
def test_a_character_that_draws_nothing_is_written_out(char, shown):
    assert visible(f"a{char}b") == f"a{shown}b"


def test_text_that_draws_is_kept_as_it_is():
    text = "café · 中文 ✓ 😀 naïve\u00a0space\ttab\nline Ω"
    assert visible(text) == text


def test_a_message_in_tag_characters_is_seen():
    shown = visible("ok" + tagged("rm -rf"))
    assert shown == "ok\\U000e0001\\U000e0072\\U000e006d\\U000e0020\\U000e002d\\U000e0072" + (
        "\\U000e0066\\U000e007f"
    )


def test_control_characters_are_still_written_out_among_hidden_ones():
    assert visible("\x1b[2J\u200b\x07\r") == "\\x1b[2J\\u200b\\x07\\r"


def test_compare_prints_a_model_name_with_hidden_characters_written_out(tmp_path):
    def hide(recording):
        recording["model"]["name"] = "gemma\u200b4" + tagged("hi")

    printed = run_cli("compare.py", altered(tmp_path, hide)).stdout
    assert "gemma\\u200b4\\U000e0001\\U000e0068\\U000e0069\\U000e007f" in printed
    assert "\u200b" not in printed and "\U000e0068" not in printed
