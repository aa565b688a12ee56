"""Where the README first runs `tpctl`, it has said how to get it: `make serve` installs the
server only and puts nothing on PATH, so a reader following the steps had no `tpctl`."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCED = re.compile(r"^```[a-z]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_the_readme_says_how_to_run_tpctl_before_its_first_command() -> None:
    readme = (ROOT / "README.md").read_text()
    first = next(block for block in FENCED.finditer(readme) if "tpctl " in block.group(1))
    before = readme[: first.start()]
    assert "uv run tpctl" in before
    assert "uv tool install ./clients/python" in before


def test_uv_run_tpctl_runs_it_from_the_checkout_with_nothing_activated() -> None:
    """As the README says it, from the repository's root, with no virtual environment on
    PATH (the tests' own is taken out)."""
    venv_bin = str(ROOT / ".venv" / "bin")
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    done = subprocess.run(
        ["uv", "run", "tpctl", "--help"],
        cwd=ROOT,
        env={**env, "PATH": path},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage: tpctl" in done.stdout
