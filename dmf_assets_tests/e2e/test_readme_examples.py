"""The README's examples of the analysts' questions, run as written against a demo's history: the emulator's
days of the dates they name, built through the daily job. `dmf history 20110531-71-B-317-05` used to answer
「이력에 해당 등록이 없습니다」 on the demo, and the dates named days no demo had."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from datetime import date, timedelta

import pytest

from dmf_assets.runs import launch
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets_tests.graph_support import make_workspace

pytestmark = pytest.mark.slow


def readme_examples() -> list[list[str]]:
    """The `dmf …` lines of the README's 'Analysts' questions' code block, as argument lists."""
    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Analysts' questions\s+```bash\n(.*?)```", text, re.S)
    assert block, "the README has no 'Analysts' questions' block"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("dmf ")]


def test_every_analyst_example_of_the_readme_answers_on_the_demo(tmp_path):
    examples = readme_examples()
    assert len(examples) >= 6
    named = sorted({date.fromisoformat(d) for args in examples for d in args if re.fullmatch(r"\d{4}-\d{2}-\d{2}", d)})
    days = [named[0] + timedelta(days=i) for i in range((named[-1] - named[0]).days + 1)]
    ws = make_workspace(tmp_path / "demo", records_in_memory=True)
    launch.run_days(days, instance=ws.instance, resources=ws.resources, trigger="demo", run_config=launch.QUIET)
    names = ("database", "raw_dir", "staging_dir", "alerts_dir", "backups_dir", "reports_dir", "events_dir", "logs_dir")
    config = tmp_path / "dmf.toml"
    data = {"database": "data/dmf.duckdb", "reports_dir": "reports"}
    config.write_text(
        "[paths]\n" + "".join(f'{n} = "{(ws.root / data.get(n, "data/" + n)).as_posix()}"\n' for n in names),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DMF_", "DAGSTER_", "MFDS_"))}
    env["DMF_CONFIG"] = str(config)
    work = tmp_path / "work"
    work.mkdir()
    for args in examples:
        done = subprocess.run(
            [sys.executable, "-m", "dmf_assets", *args], env=env, cwd=work, capture_output=True, text=True, timeout=300
        )
        said = done.stdout + done.stderr
        assert done.returncode == 0, (args, said)
        assert "없습니다" not in said and "Traceback" not in said, (args, said)
        out = next((args[i + 1] for i, a in enumerate(args) if a == "--out"), None)
        if out is not None:  # the file holds what was asked for: a header and at least one row
            assert len((work / out).read_text(encoding="utf-8-sig").splitlines()) >= 2, (args, said)
        else:
            assert said.strip(), args


def test_every_settings_example_of_the_readme_is_accepted(tmp_path):
    """A reader copies them into config/dmf.local.toml: the one for mail and chat named `[report]
    public_base_url`, a key the settings refuse since it moved to `[web]`."""
    from dmf_assets.settings import load_settings

    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    assert len(blocks) >= 2, "the README's settings examples are gone"
    for n, block in enumerate(blocks):
        config = tmp_path / f"example-{n}.toml"
        config.write_text(block, encoding="utf-8")
        load_settings(config)  # a refused example raises ConfigError, naming the key
