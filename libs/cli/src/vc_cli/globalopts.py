"""vcctl's connection flags, accepted before the command (`vcctl -s URL job list`) and after it
(`vcctl job list -s URL`, where Volcano's vcctl and kubectl users put them).

`-k/--kubeconfig` given on the command line without `--backend` means the apiserver (`--backend kube`),
as it does for Volcano's vcctl, whose every command talks to Kubernetes.
"""

from __future__ import annotations

import argparse
import os


def add_global_options(parser: argparse.ArgumentParser, *, on_command: bool = False) -> None:
    """The connection flags; `on_command`: as a command's own (absent unless given, so the values
    given before the command stand)."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if on_command else value

    parser.add_argument(
        "--server",
        "-s",
        default=default(os.environ.get("VC_SERVER", "nats://127.0.0.1:4222")),
        help="NATS URL of a running Tephra (env VC_SERVER)",
    )
    parser.add_argument(
        "--creds",
        default=default(None),
        help="NATS credentials file (env VC_NATS__CREDS; default: the admin's of the "
        "`vcctl up` data directory, $VC_DATA or .data here or above)",
    )
    parser.add_argument(
        "--ca",
        default=default(None),
        help="CA certificate of the NATS server, when the credentials carry none (env VC_NATS__CA)",
    )
    parser.add_argument(
        "--backend",
        choices=["nats", "kube"],
        default=default(None),
        help="kube: read and write the apiserver with your kubeconfig (RBAC and the webhooks apply); "
        "default: env VC_BACKEND, else kube when -k is given, else nats",
    )
    parser.add_argument(
        "--kubeconfig",
        "-k",
        default=default(None),
        help="the kubeconfig for --backend kube (default: KUBECONFIG, ~/.kube/config)",
    )


def share_global_options(parser: argparse.ArgumentParser) -> None:
    """Give every command of the tree the connection flags it does not define itself."""
    template = argparse.ArgumentParser(add_help=False)
    add_global_options(template, on_command=True)
    for leaf in _leaves(parser):
        taken = {a.dest for a in leaf._actions} | {s for a in leaf._actions for s in a.option_strings}
        for action in template._actions:
            if action.dest in taken or any(s in taken for s in action.option_strings):
                continue
            leaf._add_action(action)


def _leaves(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [parser] if parser.add_help else []  # `sim` (no help, REMAINDER) passes its words on as they are
    found: list[argparse.ArgumentParser] = []
    for action in subs:
        for child in dict.fromkeys(action.choices.values()):
            found += _leaves(child)
    return found


def resolve_backend(args: argparse.Namespace) -> str:
    return args.backend or os.environ.get("VC_BACKEND") or ("kube" if args.kubeconfig else "nats")
