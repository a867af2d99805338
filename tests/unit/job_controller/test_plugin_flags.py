"""Go `flag` parsing of plugin arguments, with errors for nonsense instead of silent defaults."""

from __future__ import annotations

import pytest

from vc_job_controller.plugins.flags import Flag, parse_flags
from vc_job_controller.plugins.interface import PluginError

FLAGS = (Flag("port", 22), Flag("master", "master"), Flag("verbose", False))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"port": 22, "master": "master", "verbose": False}),
        (["--port=2222"], {"port": 2222, "master": "master", "verbose": False}),
        (["-port", "2222"], {"port": 2222, "master": "master", "verbose": False}),
        (["--master", "m", "--verbose"], {"port": 22, "master": "m", "verbose": True}),
        (["-verbose=false", "-port=0x10"], {"port": 16, "master": "master", "verbose": False}),
        (["--master="], {"port": 22, "master": "", "verbose": False}),
        (["-verbose=T", "--"], {"port": 22, "master": "master", "verbose": True}),
    ],
)
def test_go_flag_forms(args: list[str], expected: dict[str, object]) -> None:
    assert parse_flags("p", args, FLAGS) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prot=1"], "plugin p: flag provided but not defined: -prot (known: -master, -port, -verbose)"),
        (["--port=abc"], 'plugin p: invalid value "abc" for flag -port: not an integer'),
        (["--port"], "plugin p: flag needs an argument: -port"),
        (["-verbose=maybe"], 'plugin p: invalid boolean value "maybe" for -verbose'),
        (["master"], "plugin p: unexpected argument 'master' (arguments are flags: -name=value)"),
        (["--verbose", "false"], "plugin p: unexpected argument 'false' (arguments are flags: -name=value)"),
        (["---port=1"], "plugin p: bad flag syntax: ---port=1"),
        (["--", "x"], "plugin p: unexpected argument 'x' (arguments are flags: -name=value)"),
        (["-h"], "plugin p: flag provided but not defined: -h (known: -master, -port, -verbose)"),
    ],
)
def test_nonsense_arguments_are_errors(args: list[str], message: str) -> None:
    with pytest.raises(PluginError) as error:
        parse_flags("p", args, FLAGS)
    assert str(error.value) == message


def test_too_many_arguments_are_refused() -> None:
    with pytest.raises(PluginError, match="too many arguments"):
        parse_flags("p", ["--verbose"] * 65, FLAGS)
