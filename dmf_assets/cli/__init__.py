"""The `dmf` command: every command-line entry of the product lives in this package.

Each group of subcommands is a small module here that exposes `register(subparsers)`; handlers
return an exit code. Imports are lazy (the subsystems are imported inside the handlers) so
`dmf --help` is instant and a broken optional part never breaks the others. Nothing outside
`dmf_assets.cli` imports it: it is the top layer.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import re
import sys
import warnings

from dmf_assets.errors import UserError

# polars' allocator (jemalloc): how soon freed memory goes back to the OS. Immediately (0 ms) kept
# `dmf diff`'s peak lowest but cost ≈7 s of page faults at 1 M rows; polars' own 500 ms raised the
# peak above 2 GB; 30 ms: 8.9 s and 1.9 GB. Set before polars is imported (polars appends it to its
# defaults); a user's own _RJEM_MALLOC_CONF wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:30,muzzy_decay_ms:0")

#: module path -> what it adds (for --help ordering only)
COMMAND_MODULES = (
    "dmf_assets.cli.emulator",  # dmf emulator serve | faults | truth
    "dmf_assets.cli.fetch",  # dmf fetch
    "dmf_assets.cli.diff",  # dmf diff
    "dmf_assets.cli.runs",  # dmf demo | run | backfill | ui
    "dmf_assets.cli.ops",  # dmf doctor | prune | backup
    "dmf_assets.cli.service",  # dmf service install | uninstall, dmf serve-reports
    "dmf_assets.cli.notify",  # dmf notify test | flush | status
    "dmf_assets.cli.bench",  # dmf bench
    "dmf_assets.cli.analyst",  # dmf history | asof | report
)


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


def _causes(exc: BaseException | None) -> list[BaseException]:
    """`exc` and what it was raised from, however deeply a library (Dagster, DuckDB) wrapped it."""
    chain: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in chain):
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def _full(folder: str | None) -> bool:
    try:
        return bool(folder) and os.statvfs(folder).f_bavail == 0
    except OSError:
        return False


def _disk_full(exc: BaseException) -> str | None:
    """Where the disk was full (a path, or "?") if ENOSPC/EDQUOT is behind `exc`. DuckDB reports it as
    an IOException whose text names the file; SQLite (Dagster's instance storage) only as "database or
    disk is full" or "disk I/O error" — then DAGSTER_HOME's file system must really have no space left."""
    home = os.environ.get("DAGSTER_HOME")
    for cause in _causes(exc):
        text = str(cause)
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            return str(cause.filename or "?")
        if "No space left on device" in text:
            m = re.search(r'"([^"]+)"', text)
            return m[1] if m else "?"
        if ("database or disk is full" in text or "disk I/O error" in text) and _full(home):
            return f"{home} (DAGSTER_HOME)"
    return None


def main(argv: list[str] | None = None) -> int:
    from dmf_assets.settings import ConfigError

    # Dagster marks some parameters we rely on as beta/preview: not news for a user at a terminal
    warnings.filterwarnings("ignore", message=r".*is currently in beta.*")
    warnings.filterwarnings("ignore", message=r".*partitions_def on an AssetCheckSpec.*")
    # the product's own notices (e.g. "waiting for the database lock held by PID N") reach the terminal
    notices = logging.StreamHandler(sys.stderr)
    notices.setFormatter(logging.Formatter("dmf: %(message)s"))
    logging.getLogger("dmf.db").addHandler(notices)
    logging.getLogger("dmf.db").setLevel(logging.WARNING)
    try:
        parser = build_parser()  # command modules may read the settings while importing
        args = parser.parse_args(argv)
        handler = getattr(args, "handler", None)
        if handler is None:
            parser.print_help()
            return 2
        return int(handler(args) or 0)
    except (UserError, ConfigError) as exc:
        print(f"dmf: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dmf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # output piped into `head` and friends: stop quietly, like other command-line tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        config = next((c for c in _causes(exc) if isinstance(c, ConfigError)), None)
        if config is not None:  # settings read inside a Dagster step: the same one message
            print(f"dmf: {config}", file=sys.stderr)
            return 2
        where = _disk_full(exc)
        if where is None:
            raise
        print(f"dmf: 디스크 공간이 부족합니다 (No space left on device): {where} — 공간을 확보한 뒤 다시 실행하세요 "
              f"(`dmf doctor`, `dmf prune`) / free some space and run again", file=sys.stderr)
        return 1

