"""The pre-commit hooks end to end: a real git repository, the real `pre-commit` tool, real commits."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML

from vault_tools.cli import run

from .git_repo import git, git_env
from .helpers import make_vault

PROJECT = Path(__file__).resolve().parents[1]
MANIFEST = PROJECT / ".pre-commit-hooks.yaml"
FOOTER = "Every article footer carries the newsletter link."


def pre_commit_env(home: Path) -> dict[str, str]:
    # The hook's `entry` is the `vault-tools` console script installed next to this Python.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**git_env(), "PRE_COMMIT_HOME": str(home), "PATH": path, "NO_COLOR": "1", "TERM": "dumb"}


def local_hooks_config() -> str:
    """The manifest's hooks as a `repo: local` config with `language: system`.

    `language: python` (what the manifest says) makes pre-commit build a virtualenv and pip-install
    this project into it, which needs a package index: it fails offline (setuptools cannot be
    fetched). `language: system` runs the same entries with the `vault-tools` already installed, so
    everything else the manifest declares (entry, pass_filenames, always_run) is exercised as is.
    """
    hooks = YAML(typ="safe").load(MANIFEST.read_text(encoding="utf-8"))
    for hook in hooks:
        hook["language"] = "system"
    lines = ["repos:", "  - repo: local", "    hooks:"]
    for hook in hooks:
        lines.append(f"      - id: {hook['id']}")
        lines += [f"        {key}: {value if not isinstance(value, bool) else str(value).lower()}"
                  for key, value in hook.items() if key not in ("id", "description")]
    return "\n".join(lines) + "\n"


def commit(repo: Path, env: dict[str, str], message: str) -> subprocess.CompletedProcess[str]:
    git(repo, "add", "-A")
    return subprocess.run(["git", "commit", "-m", message], cwd=repo, capture_output=True, text=True, env=env,
                          timeout=120)


def test_manifest_is_valid_for_pre_commit(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", str(MANIFEST)],
                          capture_output=True, text=True, env=pre_commit_env(tmp_path / "home"), timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    ids = [hook["id"] for hook in YAML(typ="safe").load(MANIFEST.read_text(encoding="utf-8"))]
    assert ids == ["vault-tools-build", "vault-tools-lint"]


def test_hook_passes_a_clean_commit_and_refuses_an_in_place_edit_of_a_sealed_note(tmp_path, capsys) -> None:
    repo = make_vault(tmp_path / "vault")
    env = pre_commit_env(tmp_path / "pre-commit-home")
    git(repo, "init", "-q", "-b", "main")
    ruled = ["rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat", "--vault", str(repo)]
    assert run(ruled) == 0
    assert run(["build", "--vault", str(repo)]) == 0
    capsys.readouterr()
    (repo / ".pre-commit-config.yaml").write_text(local_hooks_config(), encoding="utf-8")
    installed = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, capture_output=True,
                               text=True, env=env, timeout=60)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    clean = commit(repo, env, "Footer ruling")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    output = clean.stdout + clean.stderr
    assert "vault-tools lint....." in output and "Passed" in output and "Failed" not in output

    note = next((repo / "Decisions").glob("D-0001*.md"))
    note.write_text(note.read_text(encoding="utf-8").replace(FOOTER, "Every article footer carries only the bio."),
                    encoding="utf-8")
    refused = commit(repo, env, "Quietly change the footer ruling")
    assert refused.returncode != 0
    relative = note.relative_to(repo).as_posix()
    decision_id = note.name.split(" ", 1)[0]  # in a git repository ids carry the clone's tag
    assert (f"{relative}:7: VT021 error: {decision_id} was edited after it was sealed (summary, body differ from the sealed "
            "text); supersede a sealed ruling instead of editing it") in refused.stdout + refused.stderr
    assert git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "1"  # the edit was not committed
