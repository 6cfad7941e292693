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
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import NoReturn, TextIO

from dmf_assets.errors import UserError, causes

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
    "dmf_assets.cli.web",  # dmf web (and its former name dmf serve-reports)
    "dmf_assets.cli.service",  # dmf service install | uninstall
    "dmf_assets.cli.notify",  # dmf notify test | flush | status
    "dmf_assets.cli.bench",  # dmf bench
    "dmf_assets.cli.analyst",  # dmf history | asof | report
)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose refusals are one `dmf:` line like every other error (not usage + "error:").
    Subcommand parsers are of the same class (argparse creates them with the parent's type)."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} — 도움말 / help: {self.prog} --help")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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


def _instance_home_refuses(home: str) -> int | None:
    """Why SQLite (Dagster's instance storage in DAGSTER_HOME) cannot write, as an errno, if the folder says so:
    SQLite reports only "disk I/O error" or "unable to open database file", never the errno."""
    try:
        fs = os.statvfs(home)
    except OSError:
        return None
    if fs.f_flag & os.ST_RDONLY:
        return errno.EROFS
    if fs.f_bavail * fs.f_frsize < 4 << 20:  # a few pages short: a transaction's journal no longer fits
        return errno.ENOSPC
    return errno.EACCES if not os.access(home, os.W_OK) else None


def _refused_write(exc: BaseException) -> str | None:
    """The one line for a write the file system refused (disk full, read-only, no permission) anywhere behind
    `exc`: Python's OSError names the file; DuckDB reports it as an IOException whose text names the file in
    quotes; SQLite (Dagster's instance storage) only as "database or disk is full" and the like."""
    from dmf_assets.fsutil import refused_write_line

    home = os.environ.get("DAGSTER_HOME")
    for cause in causes(exc):
        text = str(cause)
        if isinstance(cause, OSError) and (line := refused_write_line(cause.errno, cause.filename)):
            return line
        if "No space left on device" in text:
            m = re.search(r'"([^"]+)"', text)
            return refused_write_line(errno.ENOSPC, m[1] if m else None)
        if home and "database or disk is full" in text:
            return refused_write_line(errno.ENOSPC, f"{home} (DAGSTER_HOME)")
        sqlite_cannot_write = ("disk I/O error", "unable to open database file", "attempt to write a readonly database")
        if home and any(t in text for t in sqlite_cannot_write) and (code := _instance_home_refuses(home)):
            return refused_write_line(code, f"{home} (DAGSTER_HOME)")
    return None


def _is_interrupt(exc: BaseException | None) -> bool:
    """Ctrl-C as Python raises it (KeyboardInterrupt), or as Dagster raises it inside a step."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    dagster = sys.modules.get("dagster")  # not imported for this: Dagster's own can only come once it is loaded
    return dagster is not None and isinstance(exc, dagster.DagsterExecutionInterruptedError)


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """What Python would print as "Exception ignored in …", where it says nothing new or loses a Ctrl-C.

    - A writer left for the garbage collector after a refused write (openpyxl's ZipFile) fails once more in its
      __del__: a traceback after the one line that already says why. Unsaid.
    - Ctrl-C that arrives while a finalizer runs (a __del__, a weakref callback — SQLAlchemy's, within a Dagster
      run) is raised there, as KeyboardInterrupt or, inside a step, as Dagster's interrupt error, and Python ignores
      it there: a traceback, and the work goes on until it is killed.
      Unsaid, and asked again from another thread, so that it is raised in the work itself, which stops as after
      any Ctrl-C.
    """
    from dmf_assets.fsutil import refused_write_line

    exc = unraisable.exc_value
    if _is_interrupt(exc):
        # a moment later: by then the finalizer is over (if not, this comes round again)
        again = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
        again.daemon = True
        again.start()
        return
    if isinstance(exc, OSError) and refused_write_line(exc.errno, exc.filename):
        return
    sys.__unraisablehook__(unraisable)


class _Notices(logging.StreamHandler):
    """Notices (the product's own, e.g. "waiting for the database lock held by PID N"; SQLAlchemy's errors) on the
    terminal: on whatever sys.stderr is when one comes, since main may run many times in one process (tests)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


_NOTICES = _Notices()
_NOTICES.setFormatter(logging.Formatter("dmf: %(message)s"))


class _NotAnInterruptedClose(logging.Filter):
    """SQLAlchemy logs a connection close that Ctrl-C cut short, with its traceback, and then raises the
    KeyboardInterrupt again — which `main` reports as "dmf: interrupted", once. That record is dropped; every other
    SQLAlchemy error still reaches the terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and _is_interrupt(record.exc_info[1]))


_SQLALCHEMY_ERRORS = _Notices()  # where Python's last-resort handler printed them: the terminal, as they come
_SQLALCHEMY_ERRORS.setLevel(logging.WARNING)
_SQLALCHEMY_ERRORS.addFilter(_NotAnInterruptedClose())


def _interrupted() -> int:
    """Ctrl-C, however it reached the command: one line, exit 130."""
    print("dmf: interrupted", file=sys.stderr)
    return 130


def _read_dotenv(root: str | Path | None) -> None:
    """KEY=VALUE lines of the project's .env (its --root's, when given), as `dagster dev` and the services read
    them (systemd's EnvironmentFile): every command sees the same DMF_CONFIG, secrets (MFDS_SERVICE_KEY,
    DMF_SMTP_PASSWORD, the instance's database password) and page token. The real environment wins."""
    from dmf_assets.settings import PROJECT_ROOT

    path = (Path(root).resolve() if root else PROJECT_ROOT) / ".env"
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            os.environ.setdefault(key.strip(), value.strip().strip("'\""))


def main(argv: list[str] | None = None) -> int:
    try:
        from dmf_assets.settings import ConfigError
    except KeyboardInterrupt:  # Ctrl-C while the settings load (the command's first second)
        return _interrupted()

    # Dagster marks some parameters we rely on as beta/preview: not news for a user at a terminal
    warnings.filterwarnings("ignore", message=r".*is currently in beta.*")
    warnings.filterwarnings("ignore", message=r".*partitions_def on an AssetCheckSpec.*")
    logging.getLogger("dmf.db").addHandler(_NOTICES)  # once: adding the same handler again changes nothing
    logging.getLogger("dmf.db").setLevel(logging.WARNING)
    logging.getLogger("sqlalchemy").addHandler(_SQLALCHEMY_ERRORS)
    logging.getLogger("sqlalchemy").propagate = False
    sys.unraisablehook = _unraisable
    try:
        parser = build_parser()  # command modules may read the settings while importing
        args = parser.parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # a command that runs its work in a child repeats it
        _read_dotenv(getattr(args, "root", None))
        handler = getattr(args, "handler", None)
        if handler is None:
            parser.print_help()
            return 2
        return int(handler(args) or 0)
    except (UserError, ConfigError) as exc:
        print(f"dmf: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        # output piped into `head` and friends: stop quietly, like other command-line tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        from dmf_assets.storage.db import interrupted_query

        if any(interrupted_query(c) for c in causes(exc)):  # Ctrl-C that DuckDB took for itself
            return _interrupted()
        config = next((c for c in causes(exc) if isinstance(c, ConfigError)), None)
        if config is not None:  # settings read inside a Dagster step: the same one message
            print(f"dmf: {config}", file=sys.stderr)
            return 2
        line = _refused_write(exc)
        if line is None:
            raise
        print(f"dmf: {line}", file=sys.stderr)
        return 1
