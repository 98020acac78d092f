"""scripts/demo.py: the guided tour runs the real command line on a copy of example-vault/."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from .helpers import load_script, snapshot

REPOSITORY = Path(__file__).resolve().parents[1]
DEMO = REPOSITORY / "scripts" / "demo.py"


def demo_today() -> str:
    return re.search(r'^TODAY = "([\d-]+)"', DEMO.read_text(encoding="utf-8"), re.MULTILINE).group(1)


def load_demo(monkeypatch) -> ModuleType:
    return load_script(DEMO, "vault_tools_demo", monkeypatch)


def test_demo_runs_every_step_and_shows_the_refusal(tmp_path):
    example_before = snapshot(REPOSITORY / "example-vault")
    copy = tmp_path / "Low Tide"
    done = subprocess.run([sys.executable, str(DEMO), "--into", str(copy)], capture_output=True, text=True,
                          encoding="utf-8", timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "$ vault-tools ask 'What should article footers contain?' --topic article-footers" in out
    assert "error: topic article-footers is settled" in out and "D-0014-k7q2 ruled 2026-11-05" in out
    assert "exit 1, as expected" in out
    asked = re.findall(r"asked (\d{4}-\d{2}-\d{2})", out)
    assert asked and max(asked) <= demo_today(), "a question is dated after the tour's --today"
    assert "asked again because" in out  # the re-asked question, on the pages the next session loads
    assert "D-0016-k7q2 ruled and sealed" in out
    assert "did not go as expected" not in out
    assert str(copy) in out.splitlines()[-1] or str(copy) in out[-400:]
    assert "status: ruled" in next((copy / "Decisions").glob("D-0016-k7q2 *.md")).read_text(encoding="utf-8")
    assert snapshot(REPOSITORY / "example-vault") == example_before


def test_demo_exits_non_zero_when_a_command_does_not_exit_as_expected(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "stale-example"
    shutil.copytree(REPOSITORY / "example-vault", stale)
    (stale / "Pinned" / "Open questions.md").unlink()  # `build --check` now exits 1 instead of 0
    demo = load_demo(monkeypatch)
    monkeypatch.setattr(demo, "EXAMPLE_VAULT", stale)
    monkeypatch.setattr(demo, "STEPS", demo.STEPS[:1])  # the step that runs `build --check`
    assert demo.main(["--into", str(tmp_path / "copy")]) == 1
    out = capsys.readouterr().out
    assert "vault-tools build --check --today 2026-11-29: exit 1, expected 0" in out
