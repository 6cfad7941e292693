"""The README's commands over an environment a uv user made (issue 34, "set-up survives a uv user"): `uv venv` or
`uv sync` makes a `.venv` with no pip inside, and `python3 quickstart.py test` stopped at `python -m pip … No
module named pip`. The set-up runs here on a copy of the project whose lock file pins one small package (the
step under test — an environment without pip — is the same whatever the lock holds): uv makes the `.venv` when
it is installed, else `venv --without-pip` makes the same pip-less one."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from dmf_assets.settings import PROJECT_ROOT

pytestmark = pytest.mark.slow


def _pinned(name: str) -> str:
    lock = (PROJECT_ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()
    return next(line for line in lock if line.startswith(f"{name}=="))


def test_setup_installs_the_lock_into_a_venv_without_pip(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for name in ("quickstart.py", "pyproject.toml", "README.md"):
        shutil.copy(PROJECT_ROOT / name, project / name)
    shutil.copytree(PROJECT_ROOT / "dmf_assets", project / "dmf_assets", ignore=shutil.ignore_patterns("__pycache__"))
    small = _pinned("annotated-types")
    (project / "requirements.lock").write_text(f"{small}\n", encoding="utf-8")
    venv = project / ".venv"
    uv = shutil.which("uv")
    made = [uv, "venv", "--quiet", "--python", sys.executable, str(venv)] if uv else None
    if made is None or subprocess.run(made, cwd=project).returncode != 0:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    assert subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode != 0  # no pip inside

    setup = subprocess.run(
        [sys.executable, "-c", "import quickstart; quickstart.setup()"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-2000:]
    assert "No module named pip" not in setup.stdout + setup.stderr
    installed = subprocess.run(
        [python, "-c", "import annotated_types, importlib.metadata as m; print(m.version('annotated-types'))"],
        capture_output=True,
        text=True,
    )
    assert installed.stdout.strip() == small.split("==")[1], installed.stderr
    assert (venv / ".dmf-installed").is_file()  # set up: the next command skips the installation
