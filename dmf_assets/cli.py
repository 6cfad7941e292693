"""The `dmf` command.

Each subsystem owns its subcommands in a small `commands.py` module that exposes
`register(subparsers)`; handlers return an exit code. Imports are lazy so `dmf --help` is instant
and a broken optional part never breaks the others.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

#: module path -> what it adds (for --help ordering only)
COMMAND_MODULES = (
    "dmf_assets.emulator.commands",  # dmf emulator serve | faults | truth
    "dmf_assets.source.commands",  # dmf fetch
    "dmf_assets.domain.commands",  # dmf diff
    "dmf_assets.orchestration.commands",  # dmf demo | run | backfill | ui
    "dmf_assets.ops.commands",  # dmf doctor | prune | backup
    "dmf_assets.bench.commands",  # dmf bench
)


class UserError(Exception):
    """A problem the user can fix; printed without a traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dmf",
        description="DMF Watch — MFDS 원료의약품 등록(DMF) 현황 일일 감시",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue  # subsystem not present in this build
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Dagster marks some parameters we rely on (backfill_policy) as beta: not news for a user at a terminal
    warnings.filterwarnings("ignore", message=r".*is currently in beta.*")
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except UserError as exc:
        print(f"dmf: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dmf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # output piped into `head` and friends: stop quietly, like other command-line tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

