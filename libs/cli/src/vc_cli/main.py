"""vcctl: Tephra's one command-line tool (Volcano-compatible job, queue and pod commands, plus `up` and `sim`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence

from vc_cli import up
from vc_cli.client import Endpoint, connect
from vc_cli.commands import (
    apply,
    completion,
    cronjob,
    delete,
    describe,
    events,
    job,
    jobflow,
    jobtemplate,
    node,
    pod,
    podgroup,
    queue,
    user,
    version,
)
from vc_cli.errors import CliError, not_found
from vc_cli.globalopts import add_global_options, resolve_backend, share_global_options
from vc_cli.terminal import escaped_output
from vc_core.errors import NotFound, VcError

OBJECT_COMMANDS = {
    "job": job.run,
    "queue": queue.run,
    "pod": pod.run,
    "apply": apply.run,
    "delete": delete.run,
    "node": node.run,
    "podgroup": podgroup.run,
    "describe": describe.run,
    "jobflow": jobflow.run,
    "jobtemplate": jobtemplate.run,
    "cronjob": cronjob.run,
    "events": events.run,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vcctl", description="Tephra: a Volcano-compatible batch system")
    add_global_options(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (
        job,
        queue,
        pod,
        podgroup,
        jobflow,
        jobtemplate,
        cronjob,
        apply,
        delete,
        describe,
        events,
        node,
        up,
        user,
        version,
        completion,
    ):
        module.add_parser(sub)
    sim = sub.add_parser("sim", help="offline scheduling simulation", add_help=False)
    sim.add_argument("rest", nargs=argparse.REMAINDER)
    share_global_options(parser)
    return parser


async def _run(args: argparse.Namespace) -> int:
    if args.command == "up":
        return await up.run(args)
    if standalone := getattr(args, "standalone", None):  # version, completion: no connection needed
        return int(await standalone(args))
    endpoint = Endpoint(args.server, creds=args.creds, ca=args.ca, backend=args.backend, kubeconfig=args.kubeconfig)
    async with connect(endpoint) as tephra:
        return await tephra.guard(OBJECT_COMMANDS[args.command](tephra, args))


def main(argv: Sequence[str] | None = None) -> int:
    with escaped_output():  # whatever any command prints, user text included: see vc_cli.terminal
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sim"]:
        return _sim(argv[1:])
    args = build_parser().parse_args(argv)
    from vc_cli.logs import configure_logging

    configure_logging()
    try:
        if args.command != "up":
            args.backend = resolve_backend(args)
        if prepare := getattr(args, "prepare", None):  # local input (files, flag combinations) before connecting
            prepare(args)
        code = user.run(args) if args.command == "user" else asyncio.run(_run(args))
        sys.stdout.flush()  # here, where a closed pipe is caught, not at the interpreter's exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except NotFound as exc:
        print(f"error: {not_found(exc.kind, exc.key)}", file=sys.stderr)
        return 1
    except VcError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # a local failure (a file, a socket): its reason, not a traceback
        print(f"error: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the last line of defence: one line, never a traceback
        print(f"error: unexpected {type(exc).__name__}: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        return 1


def _reader_gone() -> int:
    """The reader of stdout went away (`vcctl completion bash | head`): stop quietly, as a program killed
    by SIGPIPE does (exit 141). What is still buffered goes nowhere, rather than into a second error."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 128 + signal.SIGPIPE


def _sim(argv: list[str]) -> int:
    if argv[:1] != ["cycle"]:
        print("usage: vcctl sim cycle -f SNAPSHOT.yaml [--conf SCHEDULER.conf] [--cycles N] -o json", file=sys.stderr)
        return 2
    from vc_sched_core.sim import main as sim_main

    return int(sim_main(argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
