"""A real, throw-away PostgreSQL server on 127.0.0.1 for the instance tests and the storage benchmark.

Debian's `postgresql` package provides the binaries (/usr/lib/postgresql/<v>/bin). initdb refuses to
run as root, so as root the cluster belongs to the `postgres` account (created by the package) and
every server command runs through `runuser -u postgres`. Password authentication (scram-sha-256)
over TCP on loopback only, so the Dagster instance is configured exactly as in production: host, port,
database, user and password from environment variables.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dmf_assets_tests.notify_servers import free_port

HOST = "127.0.0.1"
USER = "dmf"
DATABASE = "dagster"


def server_binaries() -> Path | None:
    """The folder with initdb/pg_ctl/postgres, or None when the server is not installed."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for folder in candidates:
        if all((Path(folder) / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return Path(folder)
    found = shutil.which("pg_ctl")
    if found and (Path(found).resolve().parent / "postgres").is_file():
        return Path(found).resolve().parent
    return None


@dataclass(frozen=True)
class PgServer:
    port: int
    password: str
    data_dir: Path

    @property
    def env(self) -> dict[str, str]:
        """What the project's .env would hold (dagster_home/dagster.postgres.yaml reads these)."""
        return {
            "DAGSTER_PG_HOST": HOST,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_DB": DATABASE,
            "DAGSTER_PG_USERNAME": USER,
            "DAGSTER_PG_PASSWORD": self.password,
        }

    def server_cpu_s(self) -> float | None:
        """CPU seconds of the server so far: the postmaster and its exited backends (Linux /proc)."""
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split()[0])
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError, IndexError):
            return None
        ticks = os.sysconf("SC_CLK_TCK")
        return sum(int(x) for x in fields[11:15]) / ticks  # utime stime cutime cstime

    def connect(self, dbname: str = DATABASE):
        import psycopg2

        return psycopg2.connect(
            host=HOST, port=self.port, user=USER, password=self.password, dbname=dbname, connect_timeout=10
        )


@contextmanager
def postgres_server():
    """Start initdb + postgres on a free loopback port; yields a PgServer; stops and removes it after."""
    bin_dir = server_binaries()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL server binaries not found (Debian: apt-get install -y postgresql)")
    as_root = os.geteuid() == 0
    if as_root:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise FileNotFoundError("running as root but there is no 'postgres' account to own the cluster") from None
    # mkdtemp under /tmp (not pytest's 0700 root-owned folder: the postgres account must reach it)
    base = Path(tempfile.mkdtemp(prefix="dmf-pg-"))
    data, pwfile, log = base / "data", base / "pw", base / "server.log"
    password = secrets.token_urlsafe(16)
    pwfile.write_text(password + "\n", encoding="utf-8")
    if as_root:
        os.chown(base, owner.pw_uid, owner.pw_gid)
        os.chown(pwfile, owner.pw_uid, owner.pw_gid)
    pwfile.chmod(0o600)

    def run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        full = ["runuser", "-u", "postgres", "--", *cmd] if as_root else list(cmd)
        return subprocess.run(full, capture_output=True, text=True, timeout=120, check=check, cwd=base)

    port = free_port()
    started = False
    try:
        run(
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        options = (
            f"-c listen_addresses={HOST} -p {port} -k {base} -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off"
        )
        result = run(
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
            check=False,
        )
        if result.returncode != 0:
            tail = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.exists() else result.stderr
            raise RuntimeError(f"PostgreSQL did not start: {tail}")
        started = True
        server = PgServer(port, password, data)
        conn = server.connect("postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {DATABASE} OWNER {USER}")
        conn.close()
        yield server
    finally:
        if started:
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "60", "stop", check=False)
        shutil.rmtree(base, ignore_errors=True)


def write_postgres_home(home: Path, project_root: Path) -> Path:
    """A DAGSTER_HOME holding the project's PostgreSQL instance template as its dagster.yaml."""
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(project_root / "dagster_home" / "dagster.postgres.yaml", home / "dagster.yaml")
    return home
