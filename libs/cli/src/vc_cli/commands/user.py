"""vcctl user create|list|delete|token: the people who may use an embedded Tephra, and where.

Works on the `vcctl up` data directory (`--data`, default `.data`): the identity goes into
DATA/auth/identities.json (admission re-reads it) and into nats-server's authorization, which a
running server reloads at once (SIGHUP). `create` writes the person's credentials file (0600): the
NKey seed and the CA, all a tenant needs besides the server's address. `token` prints a login token
for the dashboard signed with the credentials vcctl would use (`--creds`, else the admin's), which
the dashboard checks against the same identities (vc_security.tokens). docs/tenancy.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path

from vc_cli.client import Endpoint, resolve_credentials
from vc_cli.datalock import is_locked, recorded_pids
from vc_cli.errors import CliError
from vc_cli.output import print_table
from vc_core.durations import parse_duration
from vc_core.errors import InvalidObject
from vc_security.authdir import AuthDir
from vc_security.credentials import write_private
from vc_security.tokens import MAX_LIFETIME_S, issue_token


def add_parser(sub: argparse._SubParsersAction) -> None:
    user = sub.add_parser("user", help="tenant identities of the embedded system").add_subparsers(
        dest="verb", required=True
    )
    create = user.add_parser("create", help="a tenant identity limited to some namespaces; writes its credentials file")
    create.add_argument("name", help="the identity (a DNS label, e.g. alice)")
    create.add_argument(
        "--namespaces", required=True, help="comma-separated namespaces it may write in, e.g. team-a,team-a-ci"
    )
    create.add_argument("-o", "--output", help="credentials file to write (default NAME.creds here; it must not exist)")
    listing = user.add_parser("list", help="identities and their namespaces")
    delete = user.add_parser("delete", help="remove a tenant identity (its credentials stop working)")
    delete.add_argument("name")
    for parser in (create, listing, delete):
        parser.add_argument("--data", default=os.environ.get("VC_DATA", ".data"), help="the `vcctl up` data directory")
    token = user.add_parser(
        "token", help="a dashboard login token, signed with your credentials (--creds, else the admin's)"
    )
    token.add_argument("--ttl", default=DEFAULT_TOKEN_TTL, help=f"how long it lasts (default {DEFAULT_TOKEN_TTL})")


DEFAULT_TOKEN_TTL = "12h"


def run(args: argparse.Namespace) -> int:
    if args.verb == "token":
        return _token(args)
    data = Path(args.data).resolve()
    auth = AuthDir(data / "auth")
    if not auth.registry_path.exists():
        raise CliError(
            f"{auth.root} has no identities: start Tephra there once with `vcctl up --data {args.data}`", code=2
        )
    if args.verb == "list":
        rows = [
            [p.identity, p.role, ",".join(sorted(p.namespaces)) or ("*" if p.role == "admin" else "")]
            for p in sorted(auth.people().values(), key=lambda p: p.identity)
        ]
        print_table(["Identity", "Role", "Namespaces"], rows)
        return 0
    if args.verb == "create":
        output = Path(args.output or f"{args.name}.creds")
        if output.exists():
            raise CliError(f"{output} exists; choose another -o", code=2)
        namespaces = [n.strip() for n in args.namespaces.split(",") if n.strip()]
        try:
            credentials = auth.add_tenant(args.name, namespaces)
        except ValueError as exc:
            raise CliError(str(exc), code=2) from exc
        write_private(output, credentials.encode())
        _reload(data, auth)
        print(
            f"user {args.name} created: namespaces {', '.join(namespaces)}; credentials in {output} "
            f"(use: vcctl --creds {output} ...)"
        )
        return 0
    try:
        auth.remove_tenant(args.name)
    except ValueError as exc:
        raise CliError(str(exc), code=2) from exc
    _reload(data, auth)
    print(f"user {args.name} deleted")
    return 0


RELOAD_TIMEOUT_S = 10.0


def _token(args: argparse.Namespace) -> int:
    try:
        ttl = parse_duration(args.ttl, field="--ttl")
    except InvalidObject as exc:
        raise CliError(str(exc), code=2) from None
    if not 0 < ttl <= MAX_LIFETIME_S:
        raise CliError(f"--ttl: must be more than 0 and at most {MAX_LIFETIME_S // 3600}h", code=2)
    endpoint = Endpoint(args.server, creds=args.creds, ca=args.ca)
    credentials = resolve_credentials(endpoint)
    if credentials is None:
        raise CliError("no credentials to sign with: give --creds FILE (or run where `vcctl up` keeps its data)")
    print(issue_token(credentials.identity, credentials.key, expires=int(time.time() + ttl)))
    return 0


def _reload(data: Path, auth: AuthDir) -> None:
    """Rewrite nats-server's authorization and have a running server re-read it (SIGHUP), returning
    once its log says it has: a deleted identity is shut out when this command ends."""
    auth.write_server_config()
    pid = recorded_pids(data).get("nats-server")
    if pid is None or not is_locked(data):
        return  # not running: the next `vcctl up` reads the new configuration
    log = data / "nats" / "nats-server.log"
    offset = log.stat().st_size if log.exists() else 0
    try:
        os.kill(pid, signal.SIGHUP)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + RELOAD_TIMEOUT_S
    while time.monotonic() < deadline:
        with log.open("rb") as source:
            source.seek(offset)
            text = source.read().decode(errors="replace")
        if "Reloaded server configuration" in text:
            return
        if "Failed to reload" in text or "[ERR]" in text:
            raise CliError(f"nats-server could not reload its configuration: see {log}")
        time.sleep(0.05)
    raise CliError(f"nats-server did not confirm the reload within {RELOAD_TIMEOUT_S:.0f} s: see {log}")
