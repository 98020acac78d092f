"""Real git for tests: a fixed identity, and no personal or system git config."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Owner", "GIT_AUTHOR_EMAIL": "owner@example.invalid",
    "GIT_COMMITTER_NAME": "Test Owner", "GIT_COMMITTER_EMAIL": "owner@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TEMPLATE_DIR": "",
}


def git_env() -> dict[str, str]:
    return {**os.environ, **GIT_ENV}


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env=git_env(), timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)} failed: {done.stderr}"
    return done


def commit_all(root: Path, message: str = "snapshot") -> None:
    """Commit everything in `root`, making it a git repository first if it is not one."""
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", message)
