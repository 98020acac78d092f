"""What a user installs: the wheel built from this checkout carries every module and data file, and each module
imports from the wheel, not from the checkout.

An editable install (what `make test` uses) reads the source folder, so a package the wheel leaves out goes
unnoticed there. This test builds the wheel as a user's `pip install .` would, unpacks it into a folder of its
own, and imports every module from that folder in a fresh interpreter with the editable install's finder
taken away. CI also installs the wheel into a new virtual environment and runs a user's journey with it
(scripts/installed_journey.py).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = REPOSITORY / "vault_tools"
# What a command reads at run time besides its modules.
DATA_FILES = ("vault_tools/templates/Decision.md", "vault_tools/templates/Question.md")

IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, sys
site = sys.argv[1]
# The editable install's finder (and the checkout, were it on the path) must not answer: only the wheel's files.
sys.meta_path[:] = [finder for finder in sys.meta_path if "editable" not in type(finder).__module__]
sys.path[:] = [site] + [entry for entry in sys.path if entry and entry.rstrip("/") != sys.argv[2]]
import vault_tools
found = {}
for module in pkgutil.walk_packages(vault_tools.__path__, "vault_tools."):
    if module.name == "vault_tools.__main__":
        continue  # importing it runs the command line
    found[module.name] = importlib.import_module(module.name).__file__
found["vault_tools"] = vault_tools.__file__
print(json.dumps(found))
"""


def build_wheel(tmp_path: Path) -> Path:
    """The wheel `pip install .` builds, made from a copy of the checkout (the build writes beside its source)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPOSITORY / name, source / name)
    shutil.copytree(PACKAGE, source / "vault_tools", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheels), str(source)], check=True, capture_output=True, timeout=120)
    (wheel,) = wheels.glob("*.whl")
    return wheel


def test_every_module_and_template_is_in_the_wheel_and_imports_from_it(tmp_path) -> None:
    wheel = build_wheel(tmp_path)
    assert wheel.name.startswith("vault_tools_decisions-"), "the distribution's own name, not another project's"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    sources = {path.relative_to(REPOSITORY).as_posix() for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts}
    assert sources - names == set(), "modules the wheel leaves out"
    assert set(DATA_FILES) - names == set(), "data files the wheel leaves out"
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    assert "vault-tools = vault_tools.launch:script" in (tmp_path / "site" / entry_points).read_text()

    done = subprocess.run([sys.executable, "-c", IMPORT_EVERY_MODULE, str(tmp_path / "site"), str(REPOSITORY)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout)
    expected = {path.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for path in sources} - {"vault_tools.__main__"}
    assert set(imported) == expected
    outside = {name: file for name, file in imported.items() if not file.startswith(str(tmp_path / "site"))}
    assert outside == {}, "modules imported from somewhere other than the wheel"


def test_the_installed_journey_has_a_payload_for_every_hook_event_of_every_agent(tmp_path, monkeypatch) -> None:
    """`make journey` calls every hook of the installed package with a sample payload; an event added without one
    stops it in CI only. Checked here, with the suite."""
    from tests.helpers import load_script
    from vault_tools.agents import HOOK_AGENTS, hook_module

    journey = load_script(REPOSITORY / "scripts" / "installed_journey.py", "installed_journey", monkeypatch)
    for agent in HOOK_AGENTS:
        for event, name in hook_module(agent).EVENTS.items():
            payload, _ = journey.sample_payload(agent, event, tmp_path)
            assert payload["hook_event_name"] == name, (agent, event)
