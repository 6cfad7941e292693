"""Every `dmf` command with hostile arguments: a non-zero exit, exactly one `dmf:` line on stderr, no traceback.

The commands are enumerated from the real parser (`cli.build_parser`), so a new command is covered by itself:
each gets an unknown option and, if it has required arguments, none of them; every argument that takes a
value must have hostile values in HOSTILE below (the test fails naming any that has none), so a new option
cannot slip through either. The cases run through the real entry point, `dmf_assets.cli.main(argv)`, in two
worker processes (one process per case would cost a Python start-up each) on a temporary project.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dmf_assets.cli import build_parser
from dmf_assets.cli.runs import descendants
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets.storage.db import open_database

#: hostile values by argument (option string, or a positional's name); a (command, argument) key wins.
#: Placeholders: {busy} a port another process listens on, {file} an existing file, {dir} an existing folder,
#: {full_dir} a folder with a file in it, {project} the project folder, {empty} an empty file, {deep} "[" × 200,000,
#: {bad_config} a config with inf and out-of-range settings, {fifo} a named pipe, {link} a symbolic link to a file.
HOSTILE: dict[str | tuple[str, str], tuple[str, ...]] = {
    "--port": ("99999", "0", "-1", "x", "{busy}"),
    ("emulator serve", "--port"): ("99999", "-1", "x", "{busy}"),  # 0 = any free port, on purpose
    "--web-port": ("99999", "0", "x"),
    ("ui", "--web-port"): ("99999", "0", "x", "{busy}"),
    "--host": ("192.0.2.1", ""),  # TEST-NET-1: not an address of this machine
    "--web-host": ("192.0.2.1", ""),
    "--date": ("2026-02-30", "0001-01-01", "x"),
    ("run", "--date"): ("2026-02-30", "2099-01-01", "x"),
    "date": ("2026-02-30", "x"),
    "--start": ("2026-02-30", "9999-12-31"),
    "--end": ("2026-02-30", "9999-12-31"),
    "--today": ("2026-02-30", "0001-01-01", "9999-12-31"),
    "--old": ("2026-02-30", "x"),
    "--new": ("2026-02-30", "x"),
    "--from": ("2026-02-30", "x"),
    "--to": ("2026-02-30", "x"),
    ("demo", "--days"): ("0", "367", "-3", "99999999999999999999"),
    ("notify status", "--days"): ("0", "366", "99999999999999999999", "x"),
    "--fault": ("2026-10-05=no_such_fault", "garbage"),
    "--seed": ("-1", "99999999999999999999", "x"),
    "--format": ("bogus",),
    "--items-style": ("bogus",),
    "--base-url": ("ftp://example.invalid", "not a url"),
    "--num-of-rows": ("0", "1001", "x"),
    "--raw-dir": ("/nonexistent/dir/raw", "{file}"),
    "--output": ("/nonexistent/dir/out", "{file}"),
    "--workdir": ("/nonexistent/dir/work", "{file}", "{full_dir}"),
    "--unit-dir": ("/nonexistent/dir/units", "{file}"),
    "--root": ("/nonexistent/dir", "{file}"),
    ("service install", "--root"): ("/nonexistent/dir", "{file}", "{dir}"),
    "--dir": ("/nonexistent/dir", "{file}", "{project}"),
    "--database": ("/nonexistent/dir/x.duckdb", "{dir}"),
    "--config": ("/nonexistent/dmf.toml", "{dir}", "{bad_config}"),
    "--lock-wait": ("inf", "nan", "-1", "x"),
    "--stale-warn-days": ("-1", "99999999999999999999", "x"),
    "--stale-fail-days": ("-1", "99999999999999999999", "x"),
    "--watchdog-minutes": ("0", "60", "x"),
    "--run-as": ("no_such_user_dmf_test",),
    "--out": ("/nonexistent/dir/x.xlsx", "{dir}", "/dev/full", "{fifo}", "{link}"),
    "--ingredient": ("",),
    "--applicant": ("",),
    "--manufacturer": ("",),
    "key": ("", "\udcff"),  # a byte that is not UTF-8 (`dmf history $'\xff'`): Python hands it on as a lone surrogate
    "old": ("/nonexistent/x.json", "{dir}", "{empty}", "{deep}"),
    "new": ("/nonexistent/x.json", "{dir}", "{empty}", "{deep}"),
}
#: arguments whose every value is legitimate: nothing to refuse
FREE_TEXT = {("emulator serve", "--service-key")}  # any text is a key the emulator will insist on
#: valid values given beside the hostile one (every required argument has one), so that the hostile one is
#: what the command meets: `dmf history` without a key would refuse every option for want of one
VALID = {
    "--start": "2026-10-05",
    "--end": "2026-10-06",
    "--old": "2026-10-05",
    "--new": "2026-10-06",
    "--from": "2026-10-05",
    "--to": "2026-10-06",
    "date": "2026-10-05",
    "old": "{dump}",
    "new": "{dump}",
    "key": "20110531-71-B-317-05",
}
#: always added: should a hostile value ever pass, these commands still write nothing outside the test
SAFE = {"service install": ["--dry-run"], "service uninstall": ["--dry-run"], "prune": ["--dry-run"]}

#: what a person must read for the cases the issue names (command line -> words in the one line)
MUST_SAY = {
    ("serve-reports", "--port", "99999"): "1–65535",
    ("asof", "2026-10-05", "--out", "/nonexistent/dir/x.xlsx"): "/nonexistent/dir가 없습니다",
    ("asof", "2026-10-05", "--out", "{dir}"): "폴더입니다",
    ("asof", "2026-10-05", "--out", "/dev/full"): "일반 파일이 아니라 문자 장치입니다",
    ("asof", "2026-10-05", "--out", "{fifo}"): "FIFO",
    ("asof", "2026-10-05", "--out", "{link}"): "심볼릭 링크입니다",
    ("report", "--from", "2026-10-05", "--to", "2026-10-06", "--out", "/nonexistent/dir/x.xlsx"): "없습니다",
    ("ui", "--port", "{busy}"): "이미 다른 프로그램이 쓰고 있습니다",
    ("ui", "--web-port", "{busy}"): "이미 다른 프로그램이 쓰고 있습니다",
    ("web", "--port", "{busy}"): "이미 다른 프로그램이 쓰고 있습니다",
    ("web", "--host", "192.0.2.1"): "192.0.2.1",
    ("doctor", "--config", "{bad_config}"): "source.read_timeout_s",
}

WORKER = r"""
import contextlib, io, json, sys, traceback
from dmf_assets.cli import main

results = []
for argv in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            traceback.print_exc()
            code = None
    results.append({"argv": argv, "code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
json.dump(results, sys.stdout)
"""


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser, is_leaf) for every command and command group below `parser`."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    yield path, parser, not groups
    for group in groups:
        for name, sub in group.choices.items():
            yield from _commands(sub, (*path, name))


def _name(action: argparse.Action) -> str:
    return (
        next((o for o in action.option_strings if o.startswith("--")), action.dest)
        if action.option_strings
        else action.dest
    )


def _takes_a_value(action: argparse.Action) -> bool:
    return action.nargs != 0 and not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))


def _args(action: argparse.Action, value: str) -> list[str]:
    return [_name(action), value] if action.option_strings else [value]


def cases() -> tuple[list[list[str]], list[str]]:
    """Every hostile command line, and the arguments that have no hostile values (must be empty)."""
    out: list[list[str]] = [["--no-such-option"], ["no-such-command"]]
    uncovered = []
    for path, parser, leaf in _commands(build_parser()):
        if not path:
            continue
        command = " ".join(path)
        if not leaf:
            out += [[*path, "--no-such-option"], [*path, "no-such-action"]]
            continue
        valued = [a for a in parser._actions if _takes_a_value(a)]
        given = [a for a in valued if a.required or _name(a) in VALID]
        base = [*path, *SAFE.get(command, []), *(x for a in given for x in _args(a, VALID[_name(a)]))]
        out.append([*base, "--no-such-option"])
        if any(a.required for a in valued):
            out.append([*path, *SAFE.get(command, [])])  # none of the required arguments
        for action in valued:
            name = _name(action)
            values = HOSTILE.get((command, name), HOSTILE.get(name))
            if values is None:
                if (command, name) not in FREE_TEXT:
                    uncovered.append(f"dmf {command} {name}")
                continue
            others = [x for a in given if a is not action for x in _args(a, VALID[_name(a)])]
            for value in values:
                out.append([*path, *SAFE.get(command, []), *others, *_args(action, value)])
    return out, uncovered


@pytest.fixture
def project(tmp_path):
    """A project of its own: data, an empty history database, a Dagster home, placeholders' files, a busy port."""
    names = ("database", "raw_dir", "staging_dir", "alerts_dir", "backups_dir", "reports_dir", "events_dir", "logs_dir")
    config = tmp_path / "dmf.toml"
    config.write_text("[paths]\n" + "".join(f'{n} = "{tmp_path / "data" / n}"\n' for n in names), encoding="utf-8")
    with open_database(tmp_path / "data" / "database", purpose="hostile arguments test"):
        pass
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    (tmp_path / "some_dir").mkdir()
    (tmp_path / "full_dir").mkdir()
    (tmp_path / "full_dir" / "x").write_text("x")
    (tmp_path / "some_file").write_text("x")
    (tmp_path / "empty.json").write_text("")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "some_file")
    (tmp_path / "deep.json").write_text("[" * 200_000)
    bad = tmp_path / "bad.toml"
    bad.write_text("[source]\nread_timeout_s = inf\n[retention]\nraw_days = 9999999999\n", encoding="utf-8")
    dump = next((PROJECT_ROOT / "dmf_assets" / "emulator" / "seeds").glob("*.json"))  # real API rows
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DMF_", "DAGSTER_", "MFDS_"))}
    env.update(DMF_CONFIG=str(config), DAGSTER_HOME=str(home), HOME=str(tmp_path))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        places = {
            "busy": str(busy.getsockname()[1]),
            "file": str(tmp_path / "some_file"),
            "dir": str(tmp_path / "some_dir"),
            "full_dir": str(tmp_path / "full_dir"),
            "project": str(PROJECT_ROOT),
            "empty": str(tmp_path / "empty.json"),
            "deep": str(tmp_path / "deep.json"),
            "bad_config": str(bad),
            "dump": str(dump),
            "fifo": str(tmp_path / "fifo"),
            "link": str(tmp_path / "link"),
        }
        yield env, places


def _filled(argv: list[str], places: dict[str, str]) -> list[str]:
    return [a.format(**places) if "{" in a else a for a in argv]


def _run_batches(batches: list[list[list[str]]], env: dict) -> list[dict]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=PROJECT_ROOT,
        )
        for _ in batches
    ]
    results = []
    try:
        for proc, batch in zip(procs, batches, strict=True):
            out, err = proc.communicate(json.dumps(batch), timeout=300)
            assert proc.returncode == 0, err[-3000:]
            results += json.loads(out)
    finally:  # a hostile value that was accepted started a server (dagster dev in its own session): stop it all
        for proc in procs:
            for pid in [*descendants(proc.pid), proc.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.wait()
    return results


def test_every_command_refuses_hostile_arguments_with_one_line(project):
    env, places = project
    lines, uncovered = cases()
    assert not uncovered, f"arguments without hostile values — add them to HOSTILE (or FREE_TEXT): {uncovered}"
    assert len(lines) > 150  # every command, every argument: the enumeration did not come up short
    nonexistent = Path("/nonexistent").exists()
    filled = [_filled(argv, places) for argv in lines]
    results = _run_batches([filled[0::2], filled[1::2]], env)

    wrong = []
    for r in results:
        stderr = r["stderr"]
        said = [line for line in stderr.splitlines() if line.startswith("dmf:")]
        if (
            r["code"] in (0, None)
            or len(said) != 1
            or not stderr.startswith("dmf:")
            or "Traceback" in stderr + r["stdout"]
        ):
            wrong.append(f"dmf {' '.join(r['argv'])} → exit {r['code']}, stderr: {stderr[-600:]!r}")
    assert not wrong, f"{len(wrong)} of {len(results)} cases:\n" + "\n".join(wrong)

    by_line = {tuple(r["argv"]): r["stderr"] for r in results}
    for argv, words in MUST_SAY.items():
        assert words in by_line[tuple(_filled(list(argv), places))], (argv, words)
    assert Path("/nonexistent").exists() == nonexistent  # no folder created outside the project unasked
    # what --out refused is left as it was: the device, the FIFO, the link and the file it points to
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode) and stat.S_ISFIFO(os.lstat(places["fifo"]).st_mode)
    assert os.readlink(places["link"]) == places["file"] and Path(places["file"]).read_text() == "x"


def test_out_writes_a_new_path_or_a_regular_file_and_nothing_else(tmp_path):
    from dmf_assets.errors import UserError
    from dmf_assets.fsutil import atomic_write_text, output_file

    (tmp_path / "old.csv").write_text("old")
    for name in ("new.csv", "old.csv"):
        atomic_write_text(output_file(tmp_path / name), "new")
        assert (tmp_path / name).read_text() == "new"
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere.csv")
    os.mkfifo(tmp_path / "pipe")
    for refused in ("dangling", "pipe"):
        with pytest.raises(UserError):
            output_file(tmp_path / refused)
    assert (tmp_path / "dangling").is_symlink() and not (tmp_path / "nowhere.csv").exists()
