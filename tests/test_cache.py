"""The note cache is derived data: it may make reading faster, never wrong."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from vault_tools import vault as vault_module
from vault_tools.errors import ConfigError
from vault_tools.vault import CACHE_FILE, Vault, load_config

from .conftest import decision, vt, write


def summaries(vault):
    return {d.id: d.summary for d in Vault(vault).load().decisions}


def trust_the_cache_at_once(monkeypatch):
    """What the cache does for notes older than its racy window (2 s), without waiting for it."""
    monkeypatch.setattr(vault_module, "RACY_NANOSECONDS", 0)


def test_a_same_size_edit_with_the_old_mtime_put_back_is_seen(vault, monkeypatch):
    path = decision(vault, 1, summary="Footers carry the newsletter link, always.")
    trust_the_cache_at_once(monkeypatch)
    assert summaries(vault) == {"D-0001": "Footers carry the newsletter link, always."}
    assert (vault / ".vault-tools" / CACHE_FILE).exists()
    before = path.stat()
    path.write_text(path.read_text().replace("always", "NEVER!"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert summaries(vault) == {"D-0001": "Footers carry the newsletter link, NEVER!."}


def test_an_edit_in_the_same_clock_tick_as_caching_is_seen(vault):
    path = decision(vault, 1, summary="Footers carry the newsletter link, always.")
    assert summaries(vault)["D-0001"].endswith("always.")
    path.write_text(path.read_text().replace("always", "rarely"))
    assert summaries(vault)["D-0001"].endswith("rarely.")


def test_deleted_and_broken_notes_and_a_corrupt_cache(vault, monkeypatch):
    first = decision(vault, 1)
    decision(vault, 2)
    trust_the_cache_at_once(monkeypatch)
    assert set(summaries(vault)) == {"D-0001", "D-0002"}
    first.unlink()
    assert set(summaries(vault)) == {"D-0002"}
    (vault / ".vault-tools" / CACHE_FILE).write_bytes(b"not a database at all" * 100)
    assert set(summaries(vault)) == {"D-0002"}


def test_a_folder_without_vault_tools_gets_no_cache(tmp_path):
    decision(tmp_path, 1)
    assert [d.id for d in Vault(tmp_path).load().decisions] == ["D-0001"]
    assert not (tmp_path / ".vault-tools").exists()


def test_a_nested_templates_folder_is_not_scanned(vault):
    (vault / ".vault-tools" / "config.yaml").write_text("templates_folder: Meta/Templates\n")
    decision(vault / "Meta" / "Templates", 1)  # a template that looks like a ruling
    decision(vault, 2)
    assert [d.id for d in Vault(vault).load().decisions] == ["D-0002"]


def everything_read(vault):
    state = Vault(vault).load()
    return (state.decisions, [(type(e), str(e)) for e in state.broken], state.problems, state.properties,
            state.property_lines, state.body_lines, state.files)


def test_a_first_read_in_several_processes_gives_what_one_process_gives(vault, monkeypatch):
    decision(vault, 1)
    decision(vault, 2, status="open")
    write(vault / "Decisions" / "D-0003 Broken.md", "---\ntype: decision\nid: D-0003\ntopics: [x-y\n---\n")
    write(vault / "Decisions" / "D-0004 Long.md", "---\ntype: decision\n" + "tags: [a]\n" * 3000 + "---\nbody\n")
    write(vault / "Daily" / "2026-07-17.md", "---\ntags: [daily]\n---\nWe talked about a decision.\n")
    write(vault / "Daily" / "Plain.md", "No frontmatter here.\n")
    monkeypatch.setattr(vault_module, "PARALLEL_READ_MIN", 10**9)
    one = everything_read(vault)
    (vault / ".vault-tools" / CACHE_FILE).unlink()
    monkeypatch.setattr(vault_module, "PARALLEL_READ_MIN", 1)
    monkeypatch.setattr(vault_module, "_free_processors", lambda: 2)  # however busy the machine running the test
    several = everything_read(vault)
    assert several == one
    assert [d.id for d in one[0]] == ["D-0001", "D-0002"] and len(one[1]) == 2


def test_a_changed_config_is_seen_however_soon(vault):
    """The cached config is keyed by the file's bytes: no clock tick hides an edit."""
    config = vault / ".vault-tools" / "config.yaml"
    config.write_text("timezone: Asia/Tokyo\nstale_after_days: 14\n")
    assert load_config(vault).stale_after_days == 14
    assert load_config(vault).stale_after_days == 14  # from the cache
    before = config.stat()
    config.write_text(config.read_text().replace("14", "41"))
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert load_config(vault).stale_after_days == 41
    config.write_text("timezone: Asia/Tokyo\nstale_after_days: -1\n")
    with pytest.raises(ConfigError):
        load_config(vault)


def test_a_warm_read_imports_no_yaml_library_and_no_lock(vault):
    """Reading commands start fast: once the notes and the config are cached, no YAML library, no file
    lock and no terminal library is imported (each costs more than reading a small vault)."""
    decision(vault, 1)
    time.sleep(2.1)  # the note, older than the racy window, is cached as trusted (in another process: no shortcut)
    vt("context", cwd=vault)
    probe = ("import sys, runpy; sys.argv = ['vault-tools', 'context']\n"
             "try:\n    runpy.run_module('vault_tools', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('yaml', 'ruamel', 'filelock', 'rich') if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=vault, capture_output=True, text=True, timeout=60)
    assert "D-0001" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"
