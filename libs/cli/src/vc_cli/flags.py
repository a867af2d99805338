"""Flags several commands share, spelled as Volcano's vcctl and kubectl spell them.

List commands take kubectl's `-l/--selector`, `-w/--watch`, `--output-watch-events`, `-o` and
`--no-headers`, and Volcano's `-n/--namespace` (default `default`) and `--all-namespaces` (`-A`).
Flag values are checked while the command line is parsed, so a bad one is a usage error (exit 2)
before anything connects; `prepare` steps (set with `parser.set_defaults(prepare=...)`) do the same
for what needs more than one flag, e.g. reading `-f` files.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from vc_cli.listing import Columns, Listing
from vc_cli.output import ALL_FORMATS, add_output_flags
from vc_cli.selectors import EVERYTHING, Selector, SelectorError, parse_selector
from vc_validation.names import dns1123_label_errors, dns1123_subdomain_errors


def selector_type(text: str) -> Selector:
    try:
        return parse_selector(text)
    except SelectorError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


selector_type.__name__ = "label selector"


def namespace_type(text: str) -> str:
    """A namespace is a DNS label: anything else names none (and `*` would read every one)."""
    if errors := dns1123_label_errors(text):
        raise argparse.ArgumentTypeError(f"{text!r}: {'; '.join(errors)}")
    return text


namespace_type.__name__ = "namespace"


def object_name_type(text: str) -> str:
    """An object's name is a DNS subdomain: a wildcard or a space names no object (`job history -N '*'`
    read the history of every job in the namespace)."""
    if errors := dns1123_subdomain_errors(text):
        raise argparse.ArgumentTypeError(f"{text!r}: {'; '.join(errors)}")
    return text


object_name_type.__name__ = "name"


def add_list_flags(
    parser: argparse.ArgumentParser,
    *,
    namespaced: bool = True,
    formats: tuple[str, ...] = ALL_FORMATS,
    watch: bool = True,
) -> None:
    if namespaced:
        parser.add_argument(
            "-n", "--namespace", type=namespace_type, default="default", help="the namespace (default: default)"
        )
        parser.add_argument("--all-namespaces", "-A", action="store_true", help="list across all namespaces")
    parser.add_argument(
        "-l",
        "--selector",
        type=selector_type,
        default=EVERYTHING,
        metavar="SELECTOR",
        help="label selector, e.g. app=web,tier!=cache or 'env in (prod,dev)'",
    )
    if watch:
        parser.add_argument(
            "-w", "--watch", action="store_true", help="after the list, print each change as it happens"
        )
        parser.add_argument(
            "--output-watch-events",
            action="store_true",
            help="with --watch: an Event column (ADDED, MODIFIED, DELETED)",
        )
    add_output_flags(parser, *formats)


def add_name_flags(parser: argparse.ArgumentParser, *, what: str) -> None:
    """Volcano's `-N/--name` and `-n/--namespace` (default `default`) for one namespaced object."""
    parser.add_argument("-N", "--name", type=object_name_type, required=True, help=f"the {what}'s name")
    parser.add_argument(
        "-n", "--namespace", type=namespace_type, default="default", help=f"the {what}'s namespace (default: default)"
    )


def listing_for(args: argparse.Namespace, columns: Columns[Any]) -> Listing[Any]:
    return Listing(
        columns,
        args.output,
        no_headers=getattr(args, "no_headers", False),
        all_namespaces=getattr(args, "all_namespaces", False),
        watch_events=getattr(args, "output_watch_events", False),
    )


def namespace_of(args: argparse.Namespace) -> str | None:
    """The namespace a list reads: None (all) under --all-namespaces."""
    return None if getattr(args, "all_namespaces", False) else args.namespace


def set_prepare(parser: argparse.ArgumentParser, prepare: Callable[[argparse.Namespace], None]) -> None:
    """A local step main() runs after parsing and before connecting (files, flag combinations)."""
    parser.set_defaults(prepare=prepare)
