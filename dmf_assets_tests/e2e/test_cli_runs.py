"""`dmf run | backfill | demo` tell the outcome and the cause: exit 0 accepted, 3 rejected by a gate, 1 a step
failed (with its root cause and the next step), 2 bad arguments — one line, never a traceback; a wait for
the database lock held by another process is visible. Real CLI in a subprocess on a temp project."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from dmf_assets.settings import PROJECT_ROOT
from dmf_assets.storage.db import open_database
from dmf_assets_tests.notify_servers import free_port
from dmf_assets_tests.project_support import dmf as _dmf
from dmf_assets_tests.project_support import first_day_run, wait_until
from dmf_assets_tests.project_support import temp_project as _project

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "args, says",
    [
        (["run", "--date", "2099-01-01"], "실행할 수 있는 날짜가 아닙니다"),
        (["run", "--date", "2026-13-01"], "YYYY-MM-DD"),
        (["backfill", "--start", "2026-11-01", "--end", "2099-12-31"], "실행할 수 있는 날짜가 아닙니다"),
        (["backfill", "--start", "2026-11-05", "--end", "2026-11-01"], "--end"),
        (["demo", "--days", "-3"], "1–366"),
        (["demo", "--days", "0"], "1–366"),
        (["run", "--fault", "2026-11-01=no_such_fault"], "unknown fault kind"),
        (["ui", "--web-port", "70000"], "1–65535"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(tmp_path, args, says):
    env = _project(tmp_path)
    out = _dmf(env, *args, timeout=120)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert says in out.stderr and "Traceback" not in out.stderr + out.stdout
    assert not (tmp_path / "data" / "dmf.duckdb").exists()  # nothing ran, nothing was written


def test_exit_codes_accepted_rejected_and_a_failed_step_with_its_cause(tmp_path, tmp_path_factory):
    # the accepted first day is the session's one `dmf run --date 2026-10-05`; the days after run in a copy of it
    accepted = first_day_run(tmp_path_factory)
    assert accepted.returncode == 0, accepted.stdout[-1500:] + accepted.stderr[-1500:]
    assert "기준일" in accepted.stdout

    rejected = _dmf(accepted.env, "run", "--date", "2026-10-06", "--fault", "2026-10-06=page_missing_rows")
    assert rejected.returncode == 3, rejected.stdout[-1500:] + rejected.stderr[-1500:]
    assert "거부 — 2번 완전성" in rejected.stdout and "exit 3" in rejected.stderr
    assert (accepted.root / "reports" / "DMF_리포트_2026-10-06.xlsx").exists()  # its workbook anyway

    # the real API without a key: the step fails with its root cause and what to do, exit 1
    real = _project(tmp_path / "real", '[source]\nbase_url = "https://apis.data.go.kr/1471000/MdcDmfInfoService01"\n')
    failed = _dmf(real, "run")
    assert failed.returncode == 1, failed.stdout[-1500:] + failed.stderr[-1500:]
    assert "raw_pages: MFDS_SERVICE_KEY가 설정되지 않았습니다" in failed.stdout and ".env" in failed.stdout
    assert "다시 실행하세요" in failed.stdout and "Traceback" not in failed.stdout + failed.stderr


def test_a_wait_for_the_database_lock_is_visible(tmp_path):
    env = _project(tmp_path)
    database = tmp_path / "data" / "dmf.duckdb"
    # the holder keeps the lock until told (a line on its stdin), at most 60 s
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import select, sys\nfrom dmf_assets.storage.db import open_database\n"
            f"with open_database({str(database)!r}, purpose='dmf backup'):\n    print('held', flush=True)\n"
            "    select.select([sys.stdin], [], [], 60)\n",
        ],
        env=env,
        cwd=PROJECT_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    err_path = tmp_path / "run.err"
    with open(err_path, "w", encoding="utf-8") as err_file:
        run = subprocess.Popen(
            [sys.executable, "-m", "dmf_assets", "run", "--date", "2026-10-05"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
            cwd=PROJECT_ROOT,
        )
        # release the lock once the run has said it waits for it, and has waited at least 5 s
        # (instead of holding it a fixed 20 s)
        deadline = started + 60
        while (
            time.monotonic() < deadline
            and run.poll() is None
            and not (
                "waiting for the database lock" in err_path.read_text(encoding="utf-8", errors="replace")
                and time.monotonic() - started >= 6
            )
        ):
            time.sleep(0.2)
        still_waiting = run.poll() is None
        holder.stdin.write("release\n")
        holder.stdin.flush()
        holder.wait(timeout=60)
        stdout, _ = run.communicate(timeout=600)
    out = subprocess.CompletedProcess(run.args, run.returncode, stdout, err_path.read_text(encoding="utf-8"))
    assert out.returncode == 0, out.stdout[-1500:] + out.stderr[-1500:]
    assert f"waiting for the database lock held by PID {holder.pid} (dmf backup" in out.stderr
    assert still_waiting  # it waited for the lock (6 s and more) instead of giving up
    with open_database(database, purpose="test") as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("baseline",)]


def _descendants(pid: int) -> set[int]:
    """Every process below `pid`, from each process's parent in /proc/PID/stat (a thread's children too: a run
    worker is spawned by a thread of the gRPC server, which /proc/PID/task/PID/children does not list)."""
    parent = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            continue  # exited meanwhile
    out, todo = set(), [pid]
    while todo:
        above = todo.pop()
        below = {p for p, pp in parent.items() if pp == above and p not in out}
        out |= below
        todo.extend(below)
    return out


def _role(pid: int) -> str:
    """What a process of `dmf ui`'s tree is: the daemon and the webserver are "served" by the "code server"."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"  # exited since the tree was listed
    if b"dagster._daemon" in cmdline or b"dagster_webserver" in cmdline:
        return "served"
    return "code server" if b"grpc" in cmdline or b"code-server" in cmdline else "other"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_dmf_ui_stops_its_whole_process_tree_however_many_signals_come(tmp_path):
    """A service manager's stop repeated (SIGTERM twice, 1 s apart), then a closed terminal (SIGHUP): the second
    signal used to cut the stop short (no SIGKILL fallback), leaving dagster dev, its code server, gRPC server,
    webserver and daemon behind. Every process of the tree must be gone within 40 s of the first signal, the code
    server last (after the daemon and the webserver it serves), and the terminal must show no traceback."""
    proc, port, web_port = _start_ui(tmp_path, subprocess.PIPE)
    try:
        wait_until(lambda: _ui_answers(port), proc, 180)
        tree = _descendants(proc.pid)
        assert len(tree) >= 4  # dagster dev, its code server and gRPC server, the webserver and the daemon
        # the team's page and its workbook downloads, in the same process tree
        assert httpx.get(f"http://127.0.0.1:{web_port}/reports/", timeout=5).status_code == 200
        role = {p: _role(p) for p in tree}
        first, gone = time.monotonic(), {}  # pid -> seconds after the first signal it was first seen gone

        def watch(seconds: float) -> None:
            until = time.monotonic() + seconds
            while time.monotonic() < until and len(gone) < len(tree):
                now = time.monotonic() - first  # one time a look: two processes seen gone together are a tie
                gone.update({p: now for p in tree if p not in gone and not _alive(p)})
                time.sleep(0.05)

        for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGHUP):
            proc.send_signal(sig)
            watch(1)
        watch(40 - (time.monotonic() - first))
        assert proc.wait(timeout=10) == 0
        assert not [p for p in tree if _alive(p)], f"left after {time.monotonic() - first:.0f} s"
        # the code server outlives the daemon and the webserver: a code server stopped under a sensor tick the
        # daemon is still evaluating put that tick's traceback in the terminal (CI, stop 54)
        served = [gone[p] for p in tree if role[p] == "served"]
        serving = [gone[p] for p in tree if role[p] == "code server"]
        assert len(served) == 2 and serving and max(served) <= min(serving), (role, gone)
        # what the person who started it read in the terminal: the addresses, no Python warning nor traceback
        # (`dagster dev` advises `dg dev` as it starts, in a Python warning)
        printed = proc.communicate(timeout=10)[0]
        assert f"Dagster UI: http://127.0.0.1:{port}" in printed and f"http://127.0.0.1:{web_port}/" in printed
        assert "Warning:" not in printed and "dg dev" not in printed and "Traceback" not in printed, printed[-3000:]
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{web_port}/reports/", timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in _descendants(proc.pid):
            os.kill(p, signal.SIGKILL)


def test_a_killed_dmf_ui_takes_dagster_with_it(tmp_path):
    """SIGKILL to `dmf ui` (an out-of-memory kill, a service manager's last resort) cannot be handled: `dg dev`, in a
    session of its own, kept the Dagster UI, the daemon and the code server running, and the next `dmf ui` was refused
    for a port in use. Its watch (cli/ui_watch.py) stops them: every process of the tree gone within 40 s, the UI's
    port free again."""
    proc, port, _ = _start_ui(tmp_path, subprocess.DEVNULL)
    tree: set[int] = set()
    try:
        wait_until(lambda: _ui_answers(port), proc, 180)
        tree = _descendants(proc.pid)
        assert {_role(p) for p in tree} >= {"served", "code server"}
        proc.kill()
        proc.wait(timeout=10)
        until = time.monotonic() + 40
        while time.monotonic() < until and any(_alive(p) for p in tree):
            time.sleep(0.2)
        assert not [p for p in tree if _alive(p)], [(p, _role(p)) for p in tree if _alive(p)]
        with socket.socket() as probe:  # as the next `dmf ui` checks its port
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("127.0.0.1", port))
    finally:
        for p in tree:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


def _start_ui(tmp_path: Path, output: int) -> tuple[subprocess.Popen, int, int]:
    """`dmf ui` on a temp project and two free ports, its output (stdout and stderr together) to `output`."""
    port, web_port = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dmf_assets", "ui", "--port", str(port), "--web-port", str(web_port)],
        env=_project(tmp_path),
        cwd=PROJECT_ROOT,
        stdout=output,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, port, web_port


def _ui_answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def _interrupt_after_first_day(cmd: list[str], env: dict[str, str], *, kill: bool = False) -> tuple[int, str, set[int]]:
    """Start `cmd` as a terminal does (a process group of its own), wait for its first day's line, then press
    Ctrl-C: SIGINT to the whole group (with `kill`: SIGKILL to the command's process alone). Returns (exit code,
    everything it printed, the tree it had then)."""
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        start_new_session=True,  # the terminal's foreground process group
    )
    assert proc.stdout is not None
    lines = []
    try:
        for line in proc.stdout:  # the demo prints one line per day; the next day is running when it comes
            lines.append(line)
            if re.match(r"  \d{4}-\d{2}-\d{2} ", line):
                break
        else:
            raise AssertionError("".join(lines))
        tree = _descendants(proc.pid)
        if kill:
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, "".join(lines) + rest, tree


@pytest.mark.parametrize(
    "cmd",
    [
        [sys.executable, str(PROJECT_ROOT / "quickstart.py"), "demo"],
        [sys.executable, "-m", "dmf_assets", "backfill", "--start", "2026-10-01", "--end", "2026-10-12"],
    ],
    ids=["quickstart-demo", "dmf-backfill"],
)
def test_ctrl_c_ends_quietly_in_one_line_and_stops_the_whole_tree(tmp_path, cmd):
    """Ctrl-C on `python3 quickstart.py demo` printed three KeyboardInterrupt tracebacks (quickstart's own and
    those of Dagster's log-mirroring helpers, which share the terminal's process group), and the demo went on
    with the next day. Now: one line, exit 130, no day after it, and no process of the tree left."""
    code, output, tree = _interrupt_after_first_day(cmd, _project(tmp_path))
    assert code == 130, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    assert output.count("dmf: interrupted") == 1 and output.rstrip().endswith("dmf: interrupted"), output
    assert tree and not [p for p in tree if _alive(p)]


#: Ctrl-C arriving while a finalizer runs (here a weakref callback, as SQLAlchemy's within a Dagster run): Python
#: raises KeyboardInterrupt inside the callback and ignores it there. The work is a loop of short steps.
_CTRL_C_IN_A_FINALIZER = """
import contextlib, gc, os, signal, sys, time, weakref
HOOK, RAISED_BY = sys.argv[1:]
if HOOK == "dmf":
    from dmf_assets import cli
    sys.unraisablehook = cli._unraisable
if RAISED_BY == "dagster":  # inside a step, Dagster raises Ctrl-C as its own error, at once
    import dagster as dg
    from dagster._utils.interrupts import capture_interrupts, raise_interrupts_as
    INTERRUPTS, within = (KeyboardInterrupt, dg.DagsterExecutionInterruptedError), contextlib.ExitStack()
    within.enter_context(capture_interrupts())
    within.enter_context(raise_interrupts_as(dg.DagsterExecutionInterruptedError))
else:
    INTERRUPTS, within = KeyboardInterrupt, contextlib.nullcontext()
class Resource: pass
def on_collected(_ref):
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the KeyboardInterrupt is raised here, in the callback
try:
    with within:
        resource = Resource()
        ref = weakref.ref(resource, on_collected)
        del resource
        for _ in range(300):
            time.sleep(0.01)
        print("went on")
except INTERRUPTS:
    print("stopped")
"""


@pytest.mark.parametrize("raised_by", ["python", "dagster"])
def test_ctrl_c_that_arrives_in_a_finalizer_still_stops_the_work_quietly(raised_by):
    """Seen once in `quickstart.py demo`: Ctrl-C landed in SQLAlchemy's weakref callback, Python printed it as
    "Exception ignored … KeyboardInterrupt" with a traceback, and the demo ran on until it was killed 30 s later.
    Python alone loses it (the first run shows the case is real); with the `dmf` hook the work stops, unsaid."""
    runs = {
        hook: subprocess.run(
            [sys.executable, "-c", _CTRL_C_IN_A_FINALIZER, hook, raised_by], capture_output=True, text=True, timeout=60
        )
        for hook in ("python", "dmf")
    }
    assert runs["python"].stdout.strip() == "went on" and "Exception ignored" in runs["python"].stderr
    assert runs["dmf"].stdout.strip() == "stopped", runs["dmf"]
    assert runs["dmf"].stderr == ""


#: SQLAlchemy's own pool closing a connection whose close is cut short (as Ctrl-C cuts it) or fails, in a process
#: whose terminal handlers `dmf` installed; a process of its own, since pytest's log capture would hide what
#: Python prints there
_CLOSE_CUT_SHORT = """
import contextlib, sys
from sqlalchemy.pool import QueuePool
from dmf_assets import cli
class Connection:
    def close(self):
        raise KeyboardInterrupt() if sys.argv[1] == "ctrl-c" else OSError("disk I/O error")
    def rollback(self):
        pass
with contextlib.redirect_stdout(None), contextlib.redirect_stderr(None):
    cli.main([])  # installs the terminal's handlers, as every `dmf` command does (and prints its help)
try:
    QueuePool(Connection)._close_connection(Connection())
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.parametrize("cut_by", ["ctrl-c", "other-error"])
def test_ctrl_c_while_sqlalchemy_closes_a_connection_is_said_once(cut_by):
    """Seen once at -n 4 in test_ctrl_c_ends_quietly…[dmf-backfill]: Ctrl-C landed while SQLAlchemy closed one of
    Dagster's SQLite connections; SQLAlchemy logged 「Exception closing connection」 with the KeyboardInterrupt's
    traceback before raising it again, and `dmf` printed that above its own one line. Now that record is dropped
    (the interrupt still goes on up); any other close error still reaches the terminal."""
    run = subprocess.run([sys.executable, "-c", _CLOSE_CUT_SHORT, cut_by], capture_output=True, text=True, timeout=60)
    if cut_by == "ctrl-c":
        assert (run.stdout.strip(), run.stderr) == ("interrupted", "")
    else:
        assert "Exception closing connection" in run.stderr and "disk I/O error" in run.stderr, run


#: a long DuckDB query in the history database, and Ctrl-C (SIGINT) while it runs
_CTRL_C_IN_A_QUERY = """
import os, signal, sys, threading
from dmf_assets.storage.db import open_database
try:
    with open_database(sys.argv[1]) as conn:
        conn.execute("SET threads = 1")  # DuckDB notices at once; a task of another thread may run on unaware
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        conn.execute("SELECT sum(a) FROM range(1000000000000) t(a)").fetchall()
    print("finished")
except BaseException as exc:
    print(type(exc).__name__, exc.__cause__)
"""


def test_ctrl_c_during_a_query_is_raised_as_the_interrupt_it_was(tmp_path):
    """Found by pressing Ctrl-C on `dmf backfill` at random moments: DuckDB takes a SIGINT that comes during a
    query for itself and raises 「RuntimeError: Query interrupted」 — Python never raises the KeyboardInterrupt, so
    the day failed as after an error (「원인을 고친 뒤 다시 실행하세요」) and the backfill went on with the next days.
    The history database's connection gives it back as KeyboardInterrupt (its cause: DuckDB's error)."""
    run = subprocess.run(
        [sys.executable, "-c", _CTRL_C_IN_A_QUERY, str(tmp_path / "dmf.duckdb")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.stdout.strip() == "KeyboardInterrupt Query interrupted", run


def test_a_ctrl_c_that_dagster_forgets_is_still_seen_by_the_run():
    """Dagster keeps a Ctrl-C that comes between two steps for the next step, and forgets it when the run ends
    (`capture_interrupts`): one pressed during the last step's log clean-up let `dmf backfill` run all its
    remaining days and exit 0. `execute_day` asks the signal's wake-up descriptor instead, which hears every
    SIGINT whatever the handler made of it; a run without one is not taken for interrupted."""
    from dagster._utils.interrupts import capture_interrupts

    from dmf_assets.runs import launch

    if threading.current_thread() is not threading.main_thread():  # there the SIGINT would stop pytest itself
        pytest.skip("signals are handled in the main thread only")
    with launch._ctrl_c_seen() as seen:
        with capture_interrupts():
            pass
        assert seen() is False
    with launch._ctrl_c_seen() as seen:
        with capture_interrupts():
            signal.raise_signal(signal.SIGINT)  # Dagster's handler takes it; leaving the block forgets it
        assert seen() is True


def test_a_killed_dmf_command_takes_its_work_with_it(tmp_path):
    """The work runs in a child of a session of its own (for Ctrl-C): SIGKILL to the command, which cannot be
    forwarded, must still stop that child and Dagster's helpers, as it stopped the one process of before."""
    cmd = [sys.executable, "-m", "dmf_assets", "backfill", "--start", "2026-10-01", "--end", "2026-10-12"]
    code, _output, tree = _interrupt_after_first_day(cmd, _project(tmp_path), kill=True)
    assert code == -signal.SIGKILL and tree
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in tree):
        time.sleep(0.2)
    assert not [p for p in tree if _alive(p)]


@pytest.mark.parametrize(
    "command", [("run", "--date", "2026-11-02"), ("backfill", "--start", "2026-11-02", "--end", "2026-11-03")]
)
def test_a_fault_for_a_source_other_than_the_in_process_emulator_is_refused(tmp_path, command):
    """Against a loopback `dmf emulator serve` (or the real API) the plan would reach no one: the day ran whole and
    the fault was silently ignored. Refused before anything runs, as `dmf fetch` refuses it."""
    base_url = f"http://127.0.0.1:{free_port()}/1471000/MdcDmfInfoService01"  # nobody needs to answer
    env = _project(tmp_path, f'[source]\nbase_url = "{base_url}"\n')
    result = _dmf(env, *command, "--fault", "2026-11-02=page_missing_rows")
    assert result.returncode == 2 and result.stdout == "", (result.stdout, result.stderr)
    assert result.stderr.startswith("dmf: --fault는 프로세스 안의 에뮬레이터(base_url = emulator://local)에서만")
    assert result.stderr.count("\n") == 1 and not (tmp_path / "data" / "raw").exists()
