"""vcctl turns every local failure (files, YAML, flags) into one line and exit 2."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from vc_cli.documents import MAX_FILE_BYTES, read_documents
from vc_cli.errors import CliError
from vc_cli.main import build_parser
from vc_cli.up import check_arguments

LOLS = "kind: Job\nmetadata:\n  annotations:\n    a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
BILLION_LAUGHS = LOLS + "".join(
    f"    {x}: &{x} [{', '.join([f'*{p}'] * 9)}]\n" for p, x in zip("abcdefgh", "bcdefghi", strict=True)
)
DEEP_BLOCK = "".join(f"{'  ' * i}k{i}:\n" for i in range(200)).encode()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"a: " + b"x" * (MAX_FILE_BYTES + 1), "larger than 3 MiB", id="10-MiB"),
        pytest.param(b"a: " + b"[" * 5000 + b"]" * 5000, "nested more than 64 levels deep", id="deep-flow"),
        pytest.param(DEEP_BLOCK, "nested more than 64", id="deep-block"),
        pytest.param(BILLION_LAUGHS.encode(), "expands to more than 1,000,000 values", id="billion-laughs"),
        pytest.param(b"kind: Job\nname: \xff\xfe\n", "not UTF-8 text", id="not-utf8"),
        pytest.param(b"kind: [unclosed", "not valid YAML", id="bad-yaml"),
        pytest.param(b"- 1\n- 2\n", "document 0 is not an object", id="not-an-object"),
        pytest.param(b"---\n", "no objects found", id="empty"),
    ],
)
def test_a_bad_file_is_one_line_and_exit_2(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "objects.yaml"
    path.write_bytes(content)
    with pytest.raises(CliError) as refused:
        read_documents(str(path))
    assert refused.value.code == 2 and message in str(refused.value) and "\n" not in str(refused.value)


def test_paths_that_are_not_readable_files(tmp_path: Path) -> None:
    for path, message in ((tmp_path, "is a directory"), (tmp_path / "absent.yaml", "no such file")):
        with pytest.raises(CliError) as refused:
            read_documents(str(path))
        assert refused.value.code == 2 and message in str(refused.value)


def up_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["up", *argv])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--nats-port", "70000"], "--nats-port", id="port"),
        pytest.param(["--nodes", "-3"], "--nodes", id="nodes"),
        pytest.param(["--node-cpu", "lots"], "--node-cpu", id="cpu"),
        pytest.param(["--node-gpu", "0.5"], "--node-gpu must be a whole number", id="half-gpu"),
        pytest.param(["--default-duration=-5s"], "--default-duration", id="negative-duration"),
        pytest.param(["--scheduler-conf", "/does/not/exist"], "--scheduler-conf", id="conf"),
        pytest.param(["--scheduler-replicas", "0"], "--scheduler-replicas", id="replicas"),
        pytest.param(["--vgpus-per-node", "-1"], "--vgpus-per-node", id="vgpus"),
        pytest.param(["--vgpus-per-node", "2", "--vgpu-split", "0"], "--vgpu-split", id="vgpu-split"),
    ],
)
def test_up_refuses_bad_flags_before_starting_anything(argv: list[str], message: str) -> None:
    with pytest.raises(CliError) as refused:
        check_arguments(up_args(*argv))
    assert refused.value.code == 2 and message in str(refused.value)


def test_up_accepts_its_defaults() -> None:
    check_arguments(up_args())
    check_arguments(up_args("--nats-port", "0", "--node-memory", "1.5Gi", "--default-duration", "30s"))
