"""The note cache is derived data: it may make reading faster, never wrong."""
from __future__ import annotations

import os
import time

from vault_tools.vault import CACHE_FILE, Vault

from .conftest import decision


def summaries(vault):
    return {d.id: d.summary for d in Vault(vault).load().decisions}


def test_a_same_size_edit_with_the_old_mtime_put_back_is_seen(vault):
    path = decision(vault, 1, summary="Footers carry the newsletter link, always.")
    time.sleep(2.1)  # past the racy window, so the cache entry is trusted
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


def test_deleted_and_broken_notes_and_a_corrupt_cache(vault):
    first = decision(vault, 1)
    decision(vault, 2)
    time.sleep(2.1)
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
