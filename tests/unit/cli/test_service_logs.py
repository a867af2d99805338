"""A service's log file under DATA/logs rotates by size, between lines, keeping a bounded number of files."""

from __future__ import annotations

from pathlib import Path

from vc_cli.service_logs import RotatingLog


def test_a_full_log_rotates_between_lines_and_keeps_only_the_newest_files(tmp_path: Path) -> None:
    log = RotatingLog(tmp_path / "logs" / "gc.log", max_bytes=100, keep=2)
    for i in range(20):
        log.write(f'{{"event": "line {i:02d}", "pad": "{"x" * 20}"}}\n'.encode())
    log.close()
    files = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert files == ["gc.log", "gc.log.1", "gc.log.2"]
    for name in files:
        text = (tmp_path / "logs" / name).read_text()
        assert len(text.encode()) <= 100 and text.endswith("}\n") and text.startswith('{"event"')
    newest = (tmp_path / "logs" / "gc.log").read_text().splitlines()
    assert newest[-1].startswith('{"event": "line 19"')
    assert log.tail(1) == [newest[-1]]


def test_a_log_reopened_appends_to_what_is_there(tmp_path: Path) -> None:
    path = tmp_path / "admission.log"
    first = RotatingLog(path)
    first.write(b"one\n")
    first.close()
    again = RotatingLog(path)
    again.write(b"two\n")
    again.close()
    assert path.read_text() == "one\ntwo\n"
