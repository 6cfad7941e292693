"""One source per history (issue 30 item 5, docs/DOMAIN.md §4). After the demo (the emulator's registry), pointing
`[source] base_url` at the real API (no key, no network) or at a server on this machine serving another registry
used to accept today from the emulator's archive, and a demo day too: now `dmf run` of a demo day and of today,
`dmf fetch` and a Dagster run (the schedule's, the UI's) refuse with one line and commit nothing, `dmf doctor` names
the history's source and FAILs the mismatch — and on a fresh data folder the same configuration works. A loopback
`dmf emulator serve` of the demo's seed is the same registry: the history goes on."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest

from dmf_assets.cli import main as dmf_main
from dmf_assets.clock import today_kst
from dmf_assets.defs.io import META_KEY
from dmf_assets.emulator.server import EmulatorServer
from dmf_assets.runs import launch
from dmf_assets.settings import REAL_API_URL
from dmf_assets.source.endpoint import SERVICE_BASE_PATH
from dmf_assets.storage import history
from dmf_assets_tests.client_support import fixture_rows
from dmf_assets_tests.graph_support import clocks_at, make_workspace, morning, open_workspace
from dmf_assets_tests.project_support import project_paths, read_rows, write_config
from dmf_assets_tests.real_api_support import EchoingApi, real_api_resources

pytestmark = pytest.mark.slow

EMULATOR = "emulator:20250101"
REFUSED = "dmf: 원천이 다릅니다: "


def _configure(monkeypatch, root: Path, base_url: str) -> None:
    """`dmf` commands on the project under `root`, with `base_url` as its source."""
    config = write_config(root / "dmf.cli.toml", project_paths(root), f'[source]\nbase_url = "{base_url}"\n')
    monkeypatch.setenv("DMF_CONFIG", str(config))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster_home"))


def _runs(root: Path) -> list[tuple]:
    return read_rows(root / "data" / "dmf.duckdb", "SELECT day_id, status, source_id FROM runs ORDER BY day_id")


def _files(root: Path) -> set[Path]:
    """What the project holds (alerts aside, the empty lock file a fetch attempt leaves, `.YYYY-MM-DD.lock`, and
    the ledger of requests made — the one request that learnt the server is another registry counts against the
    day's cap, `_requests/`)."""
    return {
        p.relative_to(root)
        for p in (root / "data").rglob("*")
        if "alerts" not in p.parts and "_requests" not in p.parts and p.suffix != ".lock"
    }


@pytest.fixture(scope="module")
def the_demo(tmp_path_factory):
    """A project after the demo: two days of the built-in emulator — run once for the module."""
    root = tmp_path_factory.mktemp("demo") / "project"
    ws = make_workspace(root)
    today = today_kst()
    days = [today - timedelta(days=2), today - timedelta(days=1)]
    launch.run_days(days, instance=ws.instance, resources=ws.resources, run_config=launch.QUIET)
    ws.instance.dispose()
    return root, days


@pytest.fixture
def after_the_demo(the_demo, tmp_path):
    """A copy of the project after the demo (its history, archives, staged days and Dagster records), for a test
    to change."""
    template, days = the_demo
    root = tmp_path / "project"
    shutil.copytree(template, root)
    return root, open_workspace(root), days


def test_every_archive_staged_day_and_committed_day_knows_its_source(after_the_demo):
    root, _, days = after_the_demo
    assert [(status, source) for _, status, source in _runs(root)] == [("baseline", EMULATOR), ("accepted", EMULATOR)]
    for day in days:
        manifest = json.loads((root / "data" / "raw" / day.isoformat() / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["source_id"] == EMULATOR
        staged = root / "data" / "staging" / day.isoformat() / "raw_pages.parquet"
        assert json.loads(pl.read_parquet_metadata(staged)[META_KEY])["fields"]["fetch"]["source_id"] == EMULATOR


@pytest.mark.parametrize("source", ["real_api", "another_registry_on_loopback"])
def test_after_the_demo_another_source_is_refused_and_on_a_fresh_folder_it_works(
    after_the_demo, tmp_path, monkeypatch, capsys, source
):
    root, ws, days = after_the_demo
    today = today_kst()
    monkeypatch.delenv("MFDS_SERVICE_KEY", raising=False)  # as the issue tried it: even with no key
    before, files = _runs(root), _files(root)
    with EchoingApi(fixture_rows()) as other:
        base_url = REAL_API_URL if source == "real_api" else other.url + SERVICE_BASE_PATH
        found = "식약처 Open API(apis.data.go.kr)" if source == "real_api" else "서버 127.0.0.1"
        _configure(monkeypatch, root, base_url)
        capsys.readouterr()
        for argv in (
            ["run"],
            ["run", "--date", days[0].isoformat()],
            ["fetch"],
            ["fetch", "--date", days[1].isoformat()],
        ):
            assert dmf_main(argv) == 2, argv
            err = capsys.readouterr().err
            assert err.startswith(REFUSED) and err.count("\n") == 1, (argv, err)
            assert f"에뮬레이터(seed 20250101)의 기록이 있는데, 이번 수집의 원천은 {found}입니다" in err
            assert "새 데이터 폴더" in err and "README" in err
        assert dmf_main(["doctor"]) == 2
        (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "원천 / source" in ln]
        assert line.split()[0] == "FAIL" and "이력은 에뮬레이터(seed 20250101)에서 만들어졌는데" in line
        requests_before = other.requests
        if source == "another_registry_on_loopback":
            # the schedule's (or a UI) run: the server's first answer says it is another registry — nothing archived
            report = launch.run_day(today, instance=ws.instance, resources=ws.resources | _loopback(root, base_url))
            assert report.failure is not None and report.failure.startswith("raw_pages: 원천이 다릅니다: ")
        assert _runs(root) == before and _files(root) == files  # nothing committed, nothing archived

        # a fresh data folder, the same configuration
        fresh = tmp_path / "fresh"
        make_workspace(fresh)
        _configure(monkeypatch, fresh, base_url)
        code = dmf_main(["run"])
        out, err = capsys.readouterr()
        if source == "real_api":  # no key, no network: past the source, to the key
            assert code == 1 and "MFDS_SERVICE_KEY" in out and "원천이 다릅니다" not in out + err
        else:
            assert code == 0, out + err
            assert _runs(fresh) == [(history.day_id(today), "baseline", "127.0.0.1")]
    assert source == "real_api" or other.requests > requests_before


def _loopback(root: Path, base_url: str) -> dict:
    from dmf_assets.defs.resources import build_resources
    from dmf_assets.settings import load_settings

    return {"mfds": build_resources(load_settings(), root=root, base_url=base_url)["mfds"]}


def test_the_real_apis_run_after_the_demo_is_refused_on_every_path(after_the_demo, monkeypatch):
    """The schedule's or a UI run of the real API (its client, over loopback, with a key): refused before a request."""
    root, ws, _ = after_the_demo
    monkeypatch.setenv("MFDS_SERVICE_KEY", "real-api-after-the-demo")
    before, files = _runs(root), _files(root)
    with EchoingApi(fixture_rows()) as api:
        report = launch.run_day(today_kst(), instance=ws.instance, resources=real_api_resources(root, api.url))
        assert api.requests == 0
    assert report.failure is not None and report.failure.startswith("raw_pages: 원천이 다릅니다: ")
    assert _runs(root) == before and _files(root) == files


def test_a_loopback_emulator_of_the_same_seed_is_the_same_source(after_the_demo, monkeypatch, capsys):
    root, _, days = after_the_demo
    today = today_kst()
    # `dmf run` with no date runs today: on a clock held at this morning, midnight cannot pass in between
    with EmulatorServer() as server, clocks_at(morning(today)):  # `dmf emulator serve` with the default seed
        _configure(monkeypatch, root, server.base_url)
        assert dmf_main(["run"]) == 0, capsys.readouterr()
        assert dmf_main(["doctor"]) in (0, 2)
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "원천 / source" in ln]
    assert line.split()[0] == "OK" and "에뮬레이터(seed 20250101)" in line
    assert _runs(root)[-1] == (history.day_id(today), "accepted", EMULATOR)
    assert len(_runs(root)) == len(days) + 1
