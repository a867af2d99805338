"""One `vcctl up` per data directory: two servers on one store would corrupt it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vc_cli.datalock import lock_data_dir
from vc_cli.errors import CliError


def test_a_held_data_dir_is_refused_naming_the_holder_until_it_is_released(tmp_path: Path) -> None:
    first = lock_data_dir(tmp_path / "data")
    first.record(vcctl_up=os.getpid(), nats_server=2**22 + 1)  # a pid no process has
    with pytest.raises(CliError) as refused:
        lock_data_dir(tmp_path / "data")
    message = str(refused.value)
    assert "is in use by another `vcctl up`" in message and "\n" not in message
    assert f"vcctl-up pid {os.getpid()}," in message and f"nats-server pid {2**22 + 1} (gone)" in message
    first.release()
    lock_data_dir(tmp_path / "data").release()


def test_an_unusable_data_dir_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(CliError) as refused:
        lock_data_dir(tmp_path / "file" / "data")
    assert refused.value.code == 2 and "--data" in str(refused.value)
