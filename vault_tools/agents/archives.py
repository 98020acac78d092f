"""The names of the files in a tar or zip archive, for the shell guard to judge where an extraction writes.

A module of its own so that `tarfile` and `zipfile` are loaded only for a command that extracts an archive.
"""
from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path


def member_names(path: Path, *, zipped: bool, most: int) -> list[str] | None:
    """The paths an archive holds (at most `most` + 1 of them, so that one over `most` says "too many"); None when
    it cannot be read as one."""
    try:
        if zipped:
            with zipfile.ZipFile(path) as opened_zip:
                return opened_zip.namelist()[:most + 1]
        with tarfile.open(path) as opened_tar:
            return [member.name for member in opened_tar.getmembers()[:most + 1]]
    except (OSError, tarfile.TarError, zipfile.BadZipFile, ValueError):
        return None
