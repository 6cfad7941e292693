"""The production Dagster instance on PostgreSQL (dagster_home/dagster.postgres.yaml) against a real
PostgreSQL server started by the test: the real asset graph runs days through it, and the runs, the
materializations and a rejected day's failed gate check (on its partition) are in the server database."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest
import yaml

from dmf_assets.settings import PROJECT_ROOT, load_settings
from dmf_assets_tests import pg_server
from dmf_assets_tests.notify_servers import free_port
from dmf_assets_tests.project_support import dmf, temp_project

TEMPLATE = PROJECT_ROOT / "dagster_home" / "dagster.postgres.yaml"
DAYS = ["2026-10-05", "2026-10-06", "2026-10-07"]
FAULTS = {"2026-10-07": "page_missing_rows"}  # gate 2 (completeness) rejects the third day
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def test_template_is_dagster_yaml_with_postgres_storage_and_no_secret():
    pg = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    sqlite = yaml.safe_load((PROJECT_ROOT / "dagster_home" / "dagster.yaml").read_text(encoding="utf-8"))
    storage = pg.pop("storage")
    sqlite.pop("storage", None)
    assert pg == sqlite  # run queue, pools, run monitoring: the same safety rails
    db = dict(storage["postgres"]["postgres_db"])
    assert db.pop("scheme") == "postgresql+psycopg2"  # the installed driver (SQLAlchemy 2.1 defaults to psycopg 3)
    assert db == {
        k: {"env": f"DAGSTER_PG_{v}"}
        for k, v in {
            "hostname": "HOST",
            "port": "PORT",
            "db_name": "DB",
            "username": "USERNAME",
            "password": "PASSWORD",
        }.items()
    }


@pytest.fixture(scope="module")
def server():
    pytest.importorskip(
        "dagster_postgres", reason="dagster-postgres + psycopg2-binary are not installed (requirements.lock)"
    )
    pytest.importorskip("psycopg2", reason="psycopg2-binary is not installed (requirements.lock)")
    if pg_server.server_binaries() is None:
        pytest.skip("PostgreSQL server binaries are not installed (Debian: apt-get install -y postgresql)")
    with pg_server.postgres_server() as srv:
        yield srv


def graph_assets() -> list:
    from dmf_assets.defs import assets as a

    return [a.raw_pages, a.normalized_records, a.integrity_verdict, a.snapshot_diff, a.events, a.xlsx_report]


@pytest.mark.slow
def test_asset_graph_runs_on_a_real_postgres_instance(tmp_path, server, monkeypatch):
    from dmf_assets.defs.resources import build_resources

    for key, value in {**server.env, "MFDS_SERVICE_KEY": "FAKEKEY+abc/123=="}.items():
        monkeypatch.setenv(key, value)
    home = pg_server.write_postgres_home(tmp_path / "dagster_home", PROJECT_ROOT)
    assert server.password not in (home / "dagster.yaml").read_text(encoding="utf-8")
    instance = dg.DagsterInstance.from_config(str(home))
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
    assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"

    resources = build_resources(load_settings(), root=tmp_path, emulator_faults=FAULTS)
    results = {
        day: dg.materialize(
            graph_assets(),
            partition_key=day,
            instance=instance,
            resources=resources,
            raise_on_error=False,
            run_config=QUIET,
        )
        for day in DAYS
    }
    assert results["2026-10-05"].success and results["2026-10-06"].success
    assert not results["2026-10-07"].success  # the blocking gate check stops the rejected day's run

    reports = tmp_path / "reports"
    assert (reports / "DMF_리포트_2026-10-05.xlsx").is_file() and (reports / "DMF_리포트_2026-10-06.xlsx").is_file()

    # another process's view of the same instance: everything is in the server, nothing in local files
    other = dg.DagsterInstance.from_config(str(home))
    runs = other.get_runs()
    assert sorted(r.tags.get("dagster/partition") for r in runs) == DAYS
    # accepted days are materializations of integrity_verdict; the rejected day is a failed partition whose
    # verdict is an observation
    verdicts = other.fetch_materializations(dg.AssetKey("integrity_verdict"), limit=10).records
    assert sorted(r.partition_key for r in verdicts) == DAYS[:2]
    rejected = other.fetch_observations(dg.AssetKey("integrity_verdict"), limit=10).records
    from dmf_assets.orchestration.verdict import REJECTED_TEXT, VERDICT

    assert [(r.partition_key, r.event_log_entry.asset_observation.metadata[VERDICT].value) for r in rejected] == [
        ("2026-10-07", REJECTED_TEXT)
    ]
    rejected_run = results["2026-10-07"].run_id
    checks = [
        e.dagster_event.event_specific_data
        for e in other.all_logs(rejected_run, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    ]
    failed = [c for c in checks if not c.passed]
    assert failed and {c.partition for c in failed} == {"2026-10-07"}
    assert not list(home.glob("**/*.db")), "no SQLite storage may be created beside a PostgreSQL instance"

    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM runs")
        assert cur.fetchone()[0] == 3
        cur.execute("SELECT count(*) FROM event_logs WHERE run_id = %s", [rejected_run])
        assert cur.fetchone()[0] > 10
    other.dispose()
    instance.dispose()


def test_a_postgresql_instance_that_cannot_be_reached_is_one_line_not_a_traceback(tmp_path):
    """`dmf run` on an instance whose PostgreSQL is down: after Dagster's own retries, one line naming the instance,
    the server's refusal and what to check, and exit 2 — not a traceback as the only explanation."""
    pytest.importorskip("dagster_postgres", reason="dagster-postgres is not installed (requirements.lock)")
    home = tmp_path / "pg_home"
    home.mkdir()
    shutil.copy(TEMPLATE, home / "dagster.yaml")
    port = free_port()  # nothing listens there once it is returned
    pg = {"HOST": "127.0.0.1", "PORT": str(port), "DB": "dmf", "USERNAME": "dmf", "PASSWORD": "unused"}
    env = temp_project(tmp_path) | {"DAGSTER_HOME": str(home)} | {f"DAGSTER_PG_{k}": v for k, v in pg.items()}
    done = dmf(env, "run", "--date", DAYS[0], timeout=300)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("dmf: ")]
    assert f"Dagster 인스턴스를 열 수 없습니다 (DAGSTER_HOME={home})" in line
    assert f"port {port} failed" in line and "DAGSTER_PG_" in line
