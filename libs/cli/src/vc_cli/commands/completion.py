"""vcctl completion bash|zsh|fish: print the shell completion script (see vc_cli.completion)."""

from __future__ import annotations

import argparse
import sys

from vc_cli.completion import SHELLS, script


def add_parser(sub: argparse._SubParsersAction) -> None:
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script: source <(vcctl completion bash)",
        description="bash: source <(vcctl completion bash); zsh: source <(vcctl completion zsh); "
        "fish: vcctl completion fish | source",
    )
    completion.add_argument("shell", choices=SHELLS)
    completion.set_defaults(standalone=run)


async def run(args: argparse.Namespace) -> int:
    from vc_cli.main import build_parser  # the whole tree, as the user's vcctl has it

    sys.stdout.write(script(build_parser(), args.shell))
    return 0
