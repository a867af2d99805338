"""Fuzzed vcctl input: files for `apply -f` and `job run -f` (near-valid objects, YAML tricks, garbage,
oversized files) and argument lists for the other verbs, against a real admission on a real nats-server.

vcctl runs in this process (`vc_cli.main.main`, what the `vcctl` script calls), so ten thousand inputs
take minutes, not hours. Every input must end with an exit code and, on failure, one line that says
what was wrong: never a traceback, and never vcctl's last line of defence ("error: unexpected ..."),
which only an input nobody thought of reaches.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import strategies as st

from tests.fuzz.budget import EXAMPLES, TIMEOUT_S, Tally, draw
from tests.fuzz.surfaces import FILE_ARG, Payload, argv_safe, argvs, files, materialize
from tests.support.secure import session_bus
from tests.support.services import ServiceProcess
from vc_bus.server import NatsServer
from vc_cli.main import main
from vc_cli.up import ensure_default_queues

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(TIMEOUT_S + 600)]


@pytest.fixture
def admission(nats_server: NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServiceProcess]:
    asyncio.run(ensure_default_queues(nats_server.url))
    service = ServiceProcess("vc-admission", nats_server.url, [], tmp_path / "admission.log").start()
    asyncio.run(service.wait_ready(timeout=60))
    monkeypatch.setenv("VC_SERVER", nats_server.url)
    for name, value in session_bus().admin_env().items():
        monkeypatch.setenv(name, value)
    yield service
    service.stop_quietly()


HANG_S = 60.0


def run_vcctl(argv: list[str]) -> tuple[object, str]:
    """(exit code, stderr) of one vcctl run in this process; TimeoutError when it has not ended in HANG_S
    (it runs in a daemon thread, so a hang fails this test instead of holding up the whole suite)."""
    out, err = io.StringIO(), io.StringIO()
    result: list[object] = []

    def run() -> None:
        try:
            result.append(main(argv))
        except SystemExit as exc:  # argparse: a usage error exits 2
            result.append(exc.code)
        except BaseException as exc:  # main() let something through: the caller reports it
            result.append(exc)

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        worker = threading.Thread(target=run, name="vcctl", daemon=True)
        worker.start()
        worker.join(HANG_S)
    if not result:
        raise TimeoutError(f"vcctl did not end within {HANG_S:g} s")
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0], err.getvalue()


def test_vcctl_turns_every_fuzzed_input_into_an_exit_code_and_one_clear_line(
    admission: ServiceProcess, tmp_path: Path
) -> None:
    inputs: list[tuple[list[str], Payload]] = draw(st.tuples(argvs, files))
    tally = Tally("vcctl (files for apply and job run, arguments for every verb)")
    path = tmp_path / "input.yaml"
    for argv, content in inputs:
        args = [str(path) if a == FILE_ARG else a for a in argv_safe(argv)]
        if str(path) in args:
            path.write_bytes(materialize(content))
        shown = " ".join(args) + (f" <<< {materialize(content)[:200]!r}" if str(path) in args else "")
        try:
            code, err = run_vcctl(args)
        except Exception as exc:  # main() let something through, or never ended
            tally.crash(f"raised {type(exc).__name__}: {exc}", shown)
            continue
        if not isinstance(code, int):
            tally.crash(f"exit code {code!r}", shown)
        elif "Traceback" in err or "error: unexpected" in err:
            tally.crash(f"exit {code}: {err.strip()[-300:]}", shown)
        elif code != 0 and "error" not in err and "usage:" not in err:
            tally.crash(f"exit {code} without saying why: {err.strip()[-300:]!r}", shown)
        else:
            tally.add("succeeded" if code == 0 else f"refused (exit {code})")
    tally.finish(EXAMPLES)
    assert admission.proc is not None and admission.proc.poll() is None and admission.ready()
    code, err = run_vcctl(["queue", "create", "-n", "fuzz-after"])
    assert code == 0, err
