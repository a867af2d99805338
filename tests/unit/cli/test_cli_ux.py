"""vcctl's conveniences, pure parts: the bash completion script completes in a real bash (subcommands,
flags of the command typed so far, a flag's choices), zsh and fish scripts name the same commands, and
`vcctl up`'s start-up progress shows on a terminal only and clears itself."""

from __future__ import annotations

import io
import shutil
import subprocess

import pytest

from vc_cli.completion import script
from vc_cli.main import build_parser
from vc_cli.progress import CLEAR_LINE, StartupProgress


def bash_complete(line: str) -> list[str]:
    """What the generated script offers for `line` (the cursor at its end) in a real bash."""
    words = line.split(" ")
    program = "\n".join(
        [
            script(build_parser(), "bash"),
            "COMP_WORDS=(" + " ".join(f"'{w}'" for w in words) + ")",
            f"COMP_CWORD={len(words) - 1}",
            "_vcctl",
            'printf "%s\\n" "${COMPREPLY[@]}"',
        ]
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_commands_flags_and_choices() -> None:
    assert {"job", "queue", "podgroup", "describe", "version", "completion"} <= set(bash_complete("vcctl "))
    assert bash_complete("vcctl qu") == ["queue"]
    assert {"create", "list", "operate"} <= set(bash_complete("vcctl queue "))
    assert {"-w", "--weight", "-n", "--name", "-S", "--state"} <= set(bash_complete("vcctl queue create -"))
    assert set(bash_complete("vcctl queue operate -n q1 -a ")) == {"open", "close", "update"}
    assert set(bash_complete("vcctl completion ")) == {"bash", "zsh", "fish"}


def test_zsh_and_fish_scripts_know_the_same_commands() -> None:
    zsh, fish = script(build_parser(), "zsh"), script(build_parser(), "fish")
    for word in ("queue", "podgroup", "describe", "--weight", "--selector", "--no-headers"):
        assert word in zsh, word
    for word in ("queue", "podgroup", "describe", "-l weight", "-l selector", "-l no-headers"):
        assert word in fish, word
    with pytest.raises(ValueError, match="unknown shell"):
        script(build_parser(), "tcsh")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_start_up_progress_rewrites_one_line_on_a_terminal_and_clears_it() -> None:
    now = [0.0]
    out = Terminal()
    progress = StartupProgress(out, clock=lambda: now[0], width=200)
    progress.stage("starting nats-server")
    now[0] = 3.0
    progress.services(["admission", "gc"], ["scheduler-0"])
    progress.services(["admission", "gc"], ["scheduler-0"])  # the same line is not written again
    progress.clear()
    writes = out.getvalue().split(CLEAR_LINE)
    assert writes == [
        "",
        "starting Tephra: starting nats-server (0s)",
        "starting Tephra [2/3] | up: admission, gc | waiting: scheduler-0 (3s)",
        "",
    ]


def test_start_up_progress_is_silent_in_a_pipe_and_fits_a_narrow_terminal() -> None:
    piped = io.StringIO()
    StartupProgress(piped).stage("starting nats-server")
    assert piped.getvalue() == ""
    narrow = Terminal()
    StartupProgress(narrow, width=30).services([f"service-{i}" for i in range(9)], ["scheduler-0"])
    line = narrow.getvalue().removeprefix(CLEAR_LINE)
    assert len(line) < 30 and line.endswith("...")
