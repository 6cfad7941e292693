"""`dmf diff` is as safe as the pipeline (issue 10 item 2), run as the real command in a subprocess.

A dump that fails a gate (completeness, drop, nulls, duplicates, churn) is refused with exit 3 and a
message naming the gate, the observed value and the threshold — nothing is listed, least of all a
mass withdrawal; `--force` lists the events under a warning banner. Anything unreadable is one
`dmf:` line and exit 2, never a traceback.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from dmf_assets.cli.diff import EXIT_REJECTED, EXIT_UNREADABLE, FORCE_BANNER
from dmf_assets.emulator.app import KEY_ERROR_XML
from dmf_assets.emulator.client import mfds_client_from_settings
from dmf_assets.settings import load_settings
from dmf_assets.source.dumps import load_dump
from dmf_assets.source.fetch import fetch_day

D1, D2 = date(2026, 10, 7), date(2026, 10, 8)


@pytest.fixture(scope="module")
def days(tmp_path_factory) -> dict:
    """Two archived emulator days, D2's rows, and a config with the documented default gates."""
    tmp = tmp_path_factory.mktemp("diff_gates")
    raw = tmp / "raw"
    config = mfds_client_from_settings(load_settings(), service_key="k", raw_dir=str(raw), num_of_rows=1000)
    for d in (D1, D2):
        assert fetch_day(config, d).status == "complete"
    cfg = tmp / "empty.toml"
    cfg.write_text("# the documented defaults of config/dmf.toml, whatever dmf.local.toml says\n", encoding="utf-8")
    return {
        "tmp": tmp,
        "old": raw / D1.isoformat(),
        "new": raw / D2.isoformat(),
        "items": load_dump(raw / D2.isoformat()).frame.to_dicts(),
        "config": cfg,
    }


def dmf(days, *args: str) -> subprocess.CompletedProcess:
    env = {**__import__("os").environ, "DMF_CONFIG": str(days["config"])}
    return subprocess.run(
        [sys.executable, "-m", "dmf_assets", *map(str, args)], capture_output=True, text=True, timeout=300, env=env
    )


def write_items(path: Path, items: list[dict], total_count: int | None = None) -> Path:
    doc: dict = {"items": items}
    if total_count is not None:
        doc["totalCount"] = total_count
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def withdrawn_lines(stdout: str) -> int:
    return sum(1 for line in stdout.splitlines() if "] 목록에서 삭제 " in line)


def assert_clean(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert result.stderr.startswith("dmf: "), result.stderr


def test_help_documents_the_exit_codes(days):
    result = dmf(days, "diff", "--help")
    assert result.returncode == 0
    assert "3  게이트 거부" in result.stdout and "2  읽을 수 없는 입력" in result.stdout and "--force" in result.stdout


def test_two_good_days_pass_every_gate(days):
    result = dmf(days, "diff", days["old"], days["new"])
    assert result.returncode == 0, result.stderr
    assert FORCE_BANNER not in result.stdout and result.stdout.startswith("이전 ")


def _mass_withdrawal(days):
    return write_items(days["tmp"] / "partial.json", days["items"][:4000])  # no totalCount: the drop gate decides


def _incomplete(days):
    items = days["items"]
    return write_items(days["tmp"] / "incomplete.json", items[:-300], total_count=len(items))


def _nulls(days):
    items = [dict(r) for r in days["items"]]
    for r in items[::40]:  # 2.5 % without an applicant
        r["ENTP_NAME"] = None
    return write_items(days["tmp"] / "nulls.json", items, total_count=len(items))


def _duplicates(days):
    items = [dict(r) for r in days["items"]]
    for i in range(1, len(items), 25):  # 4 % carry the number of the row before them
        items[i]["DMF_PERMIT_NO"] = items[i - 1]["DMF_PERMIT_NO"]
    return write_items(days["tmp"] / "duplicates.json", items, total_count=len(items))


def _churn(days):
    items = [dict(r) for r in days["items"]]
    for r in items[::8]:  # 12.5 % get another manufacturer
        r["MNFCTR_NAME"] = "Totally Different Pharma Co., Ltd."
    return write_items(days["tmp"] / "churn.json", items, total_count=len(items))


@pytest.mark.parametrize(
    "make, gate, setting",
    [
        (_mass_withdrawal, "게이트 3 감소율(drop)", "gates.drop_max_ratio"),
        (_incomplete, "게이트 2 완전성(completeness)", None),
        (_nulls, "게이트 4 결측(nulls)", "gates.null_max_ratio"),
        (_duplicates, "게이트 5 중복(duplicates)", "gates.duplicate_max_ratio"),
        (_churn, "게이트 6 변동률(churn)", "gates.churn_max_ratio"),
    ],
    ids=["drop", "completeness", "nulls", "duplicates", "churn"],
)
def test_a_failing_gate_refuses_with_exit_3_and_says_why(days, make, gate, setting):
    new = make(days)
    result = dmf(days, "diff", days["old"], new)
    assert result.returncode == EXIT_REJECTED == 3, (result.stdout[-500:], result.stderr)
    assert_clean(result)
    assert gate in result.stderr and "관측" in result.stderr and "기준" in result.stderr
    if setting:
        assert setting in result.stderr and "≤" in result.stderr  # the threshold, as a percentage
    assert result.stdout == "" and withdrawn_lines(result.stdout) == 0


def test_mass_withdrawal_message_has_the_numbers(days):
    result = dmf(days, "diff", days["old"], _mass_withdrawal(days))
    assert result.returncode == 3
    assert "→ 4,000건" in result.stderr and "≤ 5.00 %" in result.stderr and "--force" in result.stderr


def test_force_lists_the_events_under_a_banner(days):
    result = dmf(days, "diff", days["old"], _mass_withdrawal(days), "--force")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        lines[0].startswith("⚠ 완전성 미확인: 새 덤프(") and "totalCount가 없어" in lines[0]
    )  # no totalCount: said first
    assert "한도 45건을 넘지만 --force로 표시합니다" in lines[1]  # 0.5 % of the 9,1xx OLD rows
    assert lines[2] == FORCE_BANNER == "⚠ 게이트 실패를 무시하고 표시 (--force)"
    assert "게이트 3 감소율(drop) 실패" in result.stdout
    assert withdrawn_lines(result.stdout) > 5000  # the (not accepted) withdrawals, shown because asked for

    jsonl = dmf(days, "diff", days["old"], _mass_withdrawal(days), "--force", "--format", "jsonl")
    assert jsonl.returncode == 0 and FORCE_BANNER in jsonl.stderr and "완전성 미확인" in jsonl.stderr
    events = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert len(events) > 5000 and all(e["forced"] is True and e["completeness_unproven"] for e in events)


def _without_first(days, n: int, *, shape: str) -> Path:
    """NEW = D2 without its first `n` rows and without a totalCount: a bare list or {"items": …}."""
    items = days["items"][n:]
    path = days["tmp"] / f"without-{n}-{shape}.json"
    path.write_text(json.dumps(items if shape == "list" else {"items": items}, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("shape", ["list", "items"])
def test_without_totalcount_many_withdrawals_are_refused_unless_forced(days, shape):
    """Issue 22: 8,900 of 9,213 rows given as a bare list (or {"items": …}) once listed 311 false WITHDRAWN, exit 0.
    Completeness cannot be proven without a totalCount, so more withdrawals than max(0.5 % of OLD, 20) are refused."""
    old_rows, missing = load_dump(days["old"]).rows, 313
    new = _without_first(days, missing, shape=shape)
    refused = dmf(days, "diff", days["old"], new)
    assert refused.returncode == EXIT_REJECTED, (refused.stdout[-500:], refused.stderr)
    assert_clean(refused)
    assert len(refused.stderr.strip().splitlines()) == 1 and refused.stdout == ""
    bound = max(old_rows * 5 // 1000, 20)
    assert f"완전성 미확인: 새 덤프({new})에 totalCount가 없는데" in refused.stderr
    assert f"한도 {bound:,}건(이전 {old_rows:,}건의 0.5 % 또는 20건 중 큰 값, config [diff])" in refused.stderr
    assert "--force" in refused.stderr
    if shape == "items":
        return
    forced = dmf(days, "diff", days["old"], new, "--force")
    assert forced.returncode == 0, forced.stderr
    first, second = forced.stdout.splitlines()[:2]
    assert first.startswith(f"⚠ 완전성 미확인: 새 덤프({new})에 totalCount가 없어") and "--force로 표시합니다" in second
    assert withdrawn_lines(forced.stdout) >= missing


def test_without_totalcount_a_few_withdrawals_are_listed_under_the_warning(days):
    new = _without_first(days, 5, shape="list")
    result = dmf(days, "diff", days["old"], new)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("⚠ 완전성 미확인") and "목록에서 삭제" in lines[0] and lines[1].startswith("이전 ")
    assert withdrawn_lines(result.stdout) >= 5


@pytest.mark.parametrize("value", ["9313.0", "true", "1e30", '"9313"', "null", "-1", "4294967296"])
def test_a_totalcount_must_be_a_whole_number(tmp_path, value):
    from dmf_assets.source.dumps import DumpError, load_dump

    path = tmp_path / "dump.json"
    path.write_text(
        '{"totalCount": ' + value + ', "items": [{"DMF_PERMIT_NO": "20110531-71-B-317-05"}]}', encoding="utf-8"
    )
    with pytest.raises(DumpError, match="totalCount가 0 이상의 정수가 아닙니다"):
        load_dump(path)


def _failed_archive(days) -> Path:
    folder = days["tmp"] / "failed" / D2.isoformat()
    if not folder.exists():
        shutil.copytree(days["new"], folder)
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        manifest["status"] = "failed"
        manifest["pages"][-1]["status"] = "failed"
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def _write(days, name: str, data: bytes) -> Path:
    path = days["tmp"] / name
    path.write_bytes(data)
    return path


UNREADABLE = {
    "empty file": lambda d: _write(d, "empty.json", b""),
    "[]": lambda d: _write(d, "list.json", b"[]"),
    '{"items": []}': lambda d: _write(d, "noitems.json", b'{"items": []}'),
    "failed archive folder": _failed_archive,
    "list of integers": lambda d: _write(d, "ints.json", b"[1, 2, 3]"),
    "XML error envelope": lambda d: _write(d, "gateway.xml", KEY_ERROR_XML),
    "binary garbage": lambda d: _write(d, "garbage.bin", bytes(range(256)) * 40),
    "gzip'd garbage": lambda d: _write(d, "garbage.json.gz", gzip.compress(bytes(range(256)) * 40)),
    "directory without pages": lambda d: (d["tmp"] / "nopages").mkdir(exist_ok=True) or d["tmp"] / "nopages",
    "missing file": lambda d: d["tmp"] / "does-not-exist.json",
    "totalCount 9313.0": lambda d: _write(
        d, "float.json", json.dumps({"totalCount": 9313.0, "items": d["items"]}).encode()
    ),
    "[ × 200 000": lambda d: _write(d, "deep.json", b"[" * 200_000),
}


@pytest.mark.parametrize("kind", list(UNREADABLE))
def test_unreadable_input_is_one_clean_line_exit_2(days, kind):
    bad = UNREADABLE[kind](days)
    result = dmf(days, "diff", days["old"], bad)  # `dmf diff data/raw/D empty.json` and friends
    assert result.returncode == EXIT_UNREADABLE == 2, (result.stdout[-300:], result.stderr)
    assert_clean(result)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert withdrawn_lines(result.stdout) == 0 and result.stdout == ""
    # and as the OLD side too
    reverse = dmf(days, "diff", bad, days["new"])
    assert reverse.returncode == 2 and reverse.stderr.startswith("dmf: ") and "Traceback" not in reverse.stderr
