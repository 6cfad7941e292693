#!/usr/bin/env python3
"""Set up DMF Watch and run it — the README's two commands need nothing but Python ≥ 3.11 and pip.

    python3 quickstart.py demo    set up, then run the main job on the built-in MFDS emulator (30 days)
    python3 quickstart.py test    set up, check the code (ruff, import contracts; mypy beside the tests), run the whole test suite (what CI runs)
    python3 quickstart.py ui      set up, then start the Dagster UI and the team's page 「DMF 조회」 (workbook downloads)

Set-up = a virtual environment in .venv with the exact versions pinned in requirements.lock, and this
project installed into it (editable). It is skipped when the lock file has not changed since.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
LOCK = ROOT / "requirements.lock"
STAMP = VENV / ".dmf-installed"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")


def fail(message: str) -> None:
    print(f"quickstart: {message}", file=sys.stderr)
    sys.exit(2)


def step(message: str) -> None:
    print(f"==> {message}", flush=True)


def setup() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - run by whatever python3 the user has: this check is the point
        fail(f"Python 3.11 이상이 필요합니다 (지금 {sys.version.split()[0]}). Python 3.11+ is required.")
    wanted = hashlib.sha256(LOCK.read_bytes() + (ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if PYTHON.exists() and STAMP.exists() and STAMP.read_text().strip() == wanted:
        return
    if not PYTHON.exists():
        step(f"가상환경 만들기 / creating {VENV}")
        try:
            venv.EnvBuilder(with_pip=True, clear=VENV.exists()).create(VENV)
        except Exception as exc:  # noqa: BLE001 - whatever stops it, one line; Debian/Ubuntu ship venv separately
            fail(
                f"가상환경을 만들 수 없습니다: {exc}\n  Debian/Ubuntu: sudo apt install python3-venv, 그 다음 다시 실행하세요."
            )
    ensure_pip()
    step("고정된 의존성 설치 / installing the locked dependencies (requirements.lock)")
    if not install_with_uv():
        pip = [str(PYTHON), "-m", "pip", "--disable-pip-version-check"]
        run(pip + ["install", "--quiet", "-r", str(LOCK)])
        run(pip + ["install", "--quiet", "--no-deps", "-e", str(ROOT)])
    STAMP.write_text(wanted)


def ensure_pip() -> None:
    """A virtual environment made by `uv venv` or `uv sync` (a natural first step for anyone who sees pyproject.toml)
    has no pip: give it the one the standard library bundles (ensurepip, no network), so the set-up below — the
    same either way — can run in it."""
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": ROOT}
    if subprocess.run([str(PYTHON), "-m", "pip", "--version"], **quiet).returncode == 0:
        return
    step("pip 추가 / the environment has no pip (made by uv?): adding the bundled one (ensurepip)")
    if subprocess.run([str(PYTHON), "-m", "ensurepip", "--default-pip"], **quiet).returncode != 0:
        fail(
            f"{VENV}에 pip이 없고 추가할 수도 없습니다 — 지우고 다시 실행하세요 (rm -rf .venv) / {VENV} has no pip and "
            "ensurepip failed: remove it and run again"
        )


#: the installer for the lock file: uv installs the same pinned set as pip (byte-compiled, on every core) in
#: ≈7 s where pip takes ≈27 s; without it (no package index reachable for it, an odd platform) pip does the job
UV = "uv==0.13.9"


def install_with_uv() -> bool:
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": ROOT}
    uv = [str(PYTHON), "-m", "uv", "pip", "install", "--quiet", "--python", str(PYTHON)]
    steps = (
        [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", UV],
        uv + ["--compile-bytecode", "-r", str(LOCK)],
        uv + ["--no-deps", "-e", str(ROOT)],
    )
    for cmd in steps:
        if subprocess.run(cmd, **quiet).returncode != 0:
            step("uv를 쓸 수 없어 pip으로 설치합니다 / uv unavailable: installing with pip")
            return False
    return True


def compile_project() -> None:
    """The installer byte-compiles what it installs, but not this project (installed editable): compile what changed,
    so every process the demo and the tests start reads it compiled, even where PYTHONDONTWRITEBYTECODE is set."""
    # and bench/, which `dmf bench` loads
    run([str(PYTHON), "-m", "compileall", "-q", str(ROOT / "dmf_assets"), str(ROOT / "bench")])


#: the guard rails `test` runs, configured in pyproject.toml: (what it checks, the tool's command in the
#: environment, how a person sees the findings). ruff reads every Python file of the project (not .venv or
#: git-ignored files); lint-imports the import contracts (docs/ARCHITECTURE.md's layers); mypy the packages
#: pyproject names (dmf_assets). The first three take a second together and run first: when one finds something,
#: no test runs. mypy takes 15–30 s of one core on a fresh clone, so it runs beside pytest (the suite's workers
#: wait on servers and subprocesses part of the time) and its verdict is printed after the tests: a finding
#: still fails the command, whatever the tests say.
GUARD_RAILS = (
    ("ruff check (lint)", ["ruff", "check", "."], "ruff check ."),
    ("ruff format --check (formatting)", ["ruff", "format", "--check", "."], "ruff format --diff ."),
    ("lint-imports (layers)", ["lint-imports", "--no-cache"], "lint-imports"),
    ("mypy (types)", ["mypy"], "mypy"),
)
#: the guard rail that runs beside pytest (GUARD_RAILS' last); the others run before it
BESIDE_PYTEST = GUARD_RAILS[-1]


@dataclass
class Check:
    """A guard rail started in the background: its output kept in a temporary file (a pipe nobody reads while
    pytest runs could fill and stop it), and when it ended — its own time, not that of the tests it ran beside."""

    proc: subprocess.Popen
    output: IO[str]
    since: float = field(default_factory=time.monotonic)
    ended: float = 0.0

    def __post_init__(self) -> None:
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        self.proc.wait()
        self.ended = time.monotonic()

    def wait(self) -> tuple[int, float]:
        """Its exit code and the seconds it took."""
        self._watcher.join()
        return self.proc.returncode, self.ended - self.since

    def stop(self) -> None:
        self.proc.kill()
        self._watcher.join()
        self.output.close()


def start_check(args: list[str]) -> Check:
    output = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115 - closed by finish_check
    proc = subprocess.Popen(  # a session of its own: a Ctrl-C meant for pytest does not make it print
        [str(BIN / args[0]), *args[1:]],
        cwd=ROOT,
        stdout=output,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    return Check(proc, output)


def finish_check(rail: tuple[str, list[str], str], check: Check) -> str | None:
    """Wait for a guard rail, print its line; its failure as one line (None when it passed)."""
    what, _args, show = rail
    returncode, seconds = check.wait()
    took = f"{seconds:.1f} s"
    check.output.seek(0)
    text = check.output.read()
    check.output.close()
    print(f"==> 검사 / check: {what} … ", end="", flush=True)
    if returncode == 0:
        print(f"통과 / ok ({took})", flush=True)
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # the tool's own count ("Found 3 errors.", "2 files would be reformatted, …", "Contracts: 1 kept, 1 broken."),
    # else its last line
    summary = next(
        (
            ln
            for ln in reversed(lines)
            if re.match(r"Found \d+ error|\d+ files? would be reformatted|Contracts: \d+ kept, \d+ broken", ln)
        ),
        lines[-1] if lines else f"exit {returncode}",
    )
    print(f"실패 / failed ({took}): {summary}", flush=True)
    return f"{what}: {summary} — 보기 / see them: {BIN.relative_to(ROOT) / show}"


def guard_rails(rails: tuple[tuple[str, list[str], str], ...] = GUARD_RAILS) -> None:
    """Each check on one line; when any finds something, fail naming the tool and the command that shows it."""
    failed = [f for f in (finish_check(rail, start_check(rail[1])) for rail in rails) if f]
    if failed:
        fail(
            "코드 검사에서 지적 사항이 나왔습니다 / the guard rails found problems (pytest not run):\n  "
            + "\n  ".join(failed)
        )


def run_child(cmd: list[str], env: dict[str, str]) -> int:
    """Run a command to its end. It runs in a session of its own, so Ctrl-C reaches it once, through here: the
    first Ctrl-C, SIGTERM or SIGHUP is forwarded to it as SIGINT, and this waits until it has stopped (it says in
    one line that it was interrupted; `dmf ui` first stops the Dagster processes it started). Returns its exit
    code — 130 when a signal ended it."""
    received: list[int] = []
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)

    def forward(signum: int, _frame: Any) -> None:
        received.append(signum)
        if len(received) == 1:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGINT)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        code = proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 130 if code < 0 else code


def run(cmd: list[str], **kw: Any) -> None:
    result = subprocess.run(cmd, cwd=ROOT, **kw)
    if result.returncode != 0:
        fail(f"명령 실패 (exit {result.returncode}): {' '.join(cmd)}")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("demo", "test", "ui"):
        print(__doc__)
        return 2
    setup()
    compile_project()
    if argv[0] == "demo":
        cmd = [str(PYTHON), "-m", "dmf_assets", "demo"]
    elif argv[0] == "ui":
        cmd = [str(PYTHON), "-m", "dmf_assets", "ui"]
    else:
        # one pytest-xdist worker more than there are cores (3 on 2): while one waits (the daemon's ticks, a
        # SIGKILLed run, a subprocess) the others keep every core busy. One test file each: module fixtures
        # stay per file, every test has its own temp project, Dagster home and ports
        workers = str((os.cpu_count() or 2) + 1)
        cmd = [
            str(PYTHON),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            workers,
            "--dist",
            "loadfile",
            "--no-loadscope-reorder",
            "--durations=10",
            "--record-durations",  # each file's seconds: the next run hands the longest out first (conftest.py)
        ]
    os.chdir(ROOT)
    env = dict(os.environ)
    if argv[0] != "test":
        step(" ".join(cmd[2:]))
        return run_child(cmd, env)
    guard_rails(tuple(rail for rail in GUARD_RAILS if rail is not BESIDE_PYTEST))
    step(
        f"검사 / check: {BESIDE_PYTEST[0]} — pytest와 함께 실행 / running beside pytest (결과는 테스트 뒤 / result after)"
    )
    types = start_check(BESIDE_PYTEST[1])
    step("pytest (전체 테스트 / whole suite)")
    # pytest keeps its assertion-rewritten test modules as byte-code; with PYTHONDONTWRITEBYTECODE each
    # worker would rewrite and compile all of them again (≈2.5 s of CPU per worker)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = run_child(cmd, env)
    if code == 130:  # pytest interrupted (it said so): mypy goes too, its verdict is not wanted now
        types.stop()
        return code
    failed = finish_check(BESIDE_PYTEST, types)
    if failed:
        fail(
            "코드 검사에서 지적 사항이 나왔습니다 / the guard rails found problems (the tests ran; this still fails):"
            f"\n  {failed}"
        )
    return code


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # Ctrl-C during the set-up (pip or uv said so on its own line)
        print("quickstart: interrupted", file=sys.stderr)
        sys.exit(130)
