"""Whatever vcctl prints reaches a terminal with its control characters escaped, never obeyed."""

from __future__ import annotations

import io

import pytest

from vc_cli.main import main
from vc_cli.terminal import EscapingStream, escape_controls, unescaped

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31mFAKE: job deleted\x1b[0m"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param(HOSTILE, "\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mFAKE: job deleted\\x1b[0m", id="osc-bel-csi"),
        pytest.param("a\rb\x00c\x7f", "a\\x0db\\x00c\\x7f", id="carriage-return-nul-del"),
        pytest.param("\x9b2J", "\\x9b2J", id="8-bit-csi"),
        pytest.param("evil\u202egnp.exe", "evil\\u202egnp.exe", id="bidi-override"),
        pytest.param("NAME\tSTATUS\nq1\tOpen\n", "NAME\tSTATUS\nq1\tOpen\n", id="layout-kept"),
        pytest.param("żółw 🐢", "żółw 🐢", id="printable-unicode-kept"),
    ],
)
def test_control_characters_are_shown_escaped(text: str, shown: str) -> None:
    assert escape_controls(text) == shown
    out = io.StringIO()
    stream = EscapingStream(out)
    assert stream.write(text) == len(text)
    assert out.getvalue() == shown and unescaped(stream) is out  # type: ignore[arg-type]


def test_an_error_message_echoing_user_text_carries_no_escape(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([HOSTILE])  # argparse's own "invalid choice: ..." names what it was given
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b[2J" in err
