"""Shared test fixtures: the real MFDS rows and temporary project folders."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# Set before polars is first imported (by the plugins below), here and in every process the tests start: the
# suite already keeps each core busy with a process of its own (xdist workers, the commands and servers they
# start), so polars' own thread pool in each would only contend for the same cores — one thread each spends less
# CPU for the same wall time. Results never depend on it.
os.environ.setdefault("POLARS_MAX_THREADS", "1")

#: fixtures shared by test modules of several folders, in support modules of their own (no test module imports
#: another): the two history databases of the analyst and workbook tests, the small disk of the disk-full tests
pytest_plugins = ("dmf_assets_tests.histories", "dmf_assets_tests.disk_support")

REAL_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real"


def _real_fixture_dir() -> Path:
    # ../shared sits beside the checkout; a fresh clone elsewhere finds it through DMF_SHARED
    env = os.environ.get("DMF_SHARED")
    candidates = [Path(env) / "fixtures" / "real"] if env else []
    # fallback: the copy packaged as the emulator's seed rows (identical; see test_seed_copy)
    candidates += [REAL_FIXTURES, Path(__file__).resolve().parents[1] / "dmf_assets" / "emulator" / "seeds"]
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError("real fixtures not found; set DMF_SHARED to the shared/ folder")


@pytest.fixture(scope="session")
def real_fixture_files() -> list[Path]:
    return sorted(_real_fixture_dir().glob("*.json"))


@pytest.fixture(scope="session")
def real_items(real_fixture_files) -> list[dict]:
    """Every real API row from ../shared/fixtures/real/, unchanged."""
    items: list[dict] = []
    for path in real_fixture_files:
        items.extend(json.loads(path.read_text(encoding="utf-8"))["items"])
    assert items, "no real rows found"
    return items


#: The re-numbered registration of issue 30, as two full dumps of getMdcDmfList01 13 days apart listed it:
#: published on 2026-09-22 under a grant-style number, listed on 2026-10-08 under its own number with every
#: other field identical. Written from the issue's description (the dumps are not in the repository): the
#: ingredient, applicant, manufacturers, countries, date and numbers are the issue's; the addresses and the
#: BIZRNO are realistic stand-ins, identical on both days as they were.
RENUMBERED_BEFORE: dict[str, str] = {
    "DMF_PERMIT_NO": "20130329-190-I-83-01(1)",
    "INGR_KOR_NAME": "시롤리무스 분산용액",
    "ENTP_NAME": "한국화이자제약(주)",
    "MNFCTR_NAME": "Lonza AG,Pfizer Ireland Pharmaceuticals",
    "MNFCTR_PLACE": "Lonzastrasse, 3930 Visp, Switzerland,Ringaskiddy, County Cork, Ireland",
    "MANUF_COUNTRY_CODE_NM": "스위스,아일랜드",
    "DMF_PERMIT_DATE": "2026-09-22",
    "BIZRNO": "1048117406",
    "NOTICE_CODE": "별표1",
}
RENUMBERED_AFTER: dict[str, str] = {**RENUMBERED_BEFORE, "DMF_PERMIT_NO": "20260922-190-I-769-04"}


@pytest.fixture(scope="session")
def renumbered_rows() -> tuple[dict[str, str], dict[str, str]]:
    """(the row on 2026-09-25, the row on 2026-10-08) of the registration re-numbered in between (issue 30);
    shared — copy a row before changing it (`renumbered_pair` does)."""
    return RENUMBERED_BEFORE, RENUMBERED_AFTER


@pytest.fixture
def renumbered_pair(renumbered_rows) -> tuple[dict[str, str], dict[str, str]]:
    """Copies of `renumbered_rows` a test may change."""
    before, after = renumbered_rows
    return dict(before), dict(after)


# --- temporary folders in memory ------------------------------------------------------------------
# A test day writes SQLite (Dagster's run and event storage: ~1,500 commits, each an fsync) and DuckDB.
# On a disk each fsync costs milliseconds — seconds per day-run; on tmpfs nothing, and the files, the
# processes and the code paths are the same (SIGKILL tests still kill a process). So pytest's own
# temporary folder (tmp_path, tmp_path_factory) goes to /dev/shm when it has room to spare and no
# --basetemp was given; the folder is removed at the end. DMF_TEST_TMP=disk keeps pytest's default.

_RAM_BASETEMP: Path | None = None


def _ram_basetemp() -> Path | None:
    import os
    import shutil

    shm = Path("/dev/shm")
    if os.environ.get("DMF_TEST_TMP") == "disk":
        return None
    try:
        if not (shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= 4 << 30):
            return None
    except OSError:
        return None
    return shm / f"dmf-tests-{os.getuid()}-{os.getpid()}"


def pytest_configure(config: pytest.Config) -> None:
    global _RAM_BASETEMP
    _record_durations(config)
    if config.option.basetemp is None and not hasattr(config, "workerinput"):  # xdist workers inherit it
        _RAM_BASETEMP = _ram_basetemp()
        if _RAM_BASETEMP is not None:
            config.option.basetemp = str(_RAM_BASETEMP)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _RAM_BASETEMP is not None:
        import shutil

        shutil.rmtree(_RAM_BASETEMP, ignore_errors=True)  # it is memory: nothing stays behind


# --- order ----------------------------------------------------------------------------------------
# `quickstart.py test` runs `-n 3 --dist loadfile --no-loadscope-reorder`: whole files handed out to the workers in
# collection order. The longest files go first, so the workers finish together instead of one running a long file
# alone at the end — by the suite's own measure: DURATIONS holds each file's seconds (setup, call and teardown of
# its tests) as the last `quickstart.py test` measured them (it passes --record-durations); committed, so a fresh
# clone orders its first run the same way. A file it does not know yet goes last. The sort is stable: inside a
# file the order stays as written.

DURATIONS = Path(__file__).resolve().with_name("durations.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each test file's measured seconds to {DURATIONS.name} (the order of the next run)",
    )


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _durations() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        return {}  # none yet, or unreadable: collection order


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seconds = _durations()
    items.sort(key=lambda item: -seconds.get(_file_of(item.nodeid), 0.0))


class _DurationRecorder:
    """In the process that reports (xdist's controller, or the only one): each file's seconds, written at the end
    of a run that was not interrupted; files not run this time keep theirs, files that are gone are dropped."""

    def __init__(self, rootdir: Path) -> None:
        self.rootdir = rootdir
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        file = _file_of(report.nodeid)
        self.seconds[file] = self.seconds.get(file, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or not self.seconds:
            return
        merged = {f: s for f, s in _durations().items() if (self.rootdir / f).is_file()} | self.seconds
        ordered = dict(sorted(((f, round(s, 1)) for f, s in merged.items()), key=lambda fs: (-fs[1], fs[0])))
        tmp = DURATIONS.with_suffix(".tmp")
        tmp.write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")
        tmp.replace(DURATIONS)


def _record_durations(config: pytest.Config) -> None:
    if config.getoption("record_durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_DurationRecorder(config.rootpath), "dmf-durations")


# --- the settings a test reads ----------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _documented_settings_only(tmp_path_factory: pytest.TempPathFactory):
    """Tests read the documented defaults (config/dmf.toml) and the files they write themselves — never a
    developer's own config/dmf.local.toml, which would change their results. For the whole session (each
    xdist worker), DMF_CONFIG names an empty override instead; the processes a test starts inherit it. A test
    that names its own file (monkeypatch.setenv, a subprocess env) still gets it, and the variable is
    restored when the session ends."""
    from dmf_assets.settings import settings

    config = tmp_path_factory.mktemp("settings") / "dmf.test.toml"
    config.write_text("# the tests' override: none — config/dmf.toml's documented defaults\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DMF_CONFIG", str(config))
        settings.cache_clear()  # anything read while collecting the tests read the developer's files
        yield config
    settings.cache_clear()
