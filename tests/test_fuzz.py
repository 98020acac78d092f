"""Fuzzing what vault-tools parses: a decision note's frontmatter, the ledger and the config, damaged with
random bytes, cut short or saved in another encoding, read through the command line. However broken the
input, every command ends with an answer or a one-line error: never an internal error (exit 4)."""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_tools.cli import run

from .helpers import config_file, decision, ledger_file, made_id, make_vault, note_path

EXAMPLES = int(os.environ.get("VAULT_TOOLS_FUZZ_EXAMPLES", 10))  # per kind of input; raise it for a longer pass
COMMANDS = (["lint"], ["list"], ["lookup", "article-footer"], ["context"], ["show", "D-0002"],
            ["ask", "Should the podcast get a theme tune?", "--topic", "podcast-music"], ["seal"],
            ["watch", "--once"], ["lint", "--fix"])
ENCODINGS = ("utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252", "utf-8-sig", "shift_jis")


@st.composite
def damaged(draw: st.DrawFn, original: bytes) -> bytes:
    """`original` with one kind of damage: random bytes spliced in, cut short, re-encoded, or all random."""
    kind = draw(st.sampled_from(["splice", "truncate", "encode", "random", "flip"]))
    if kind == "splice":
        at = draw(st.integers(0, len(original)))
        return original[:at] + draw(st.binary(min_size=1, max_size=40)) + original[at:]
    if kind == "truncate":
        return original[:draw(st.integers(0, max(0, len(original) - 1)))]
    if kind == "encode":
        text = original.decode("utf-8")
        return text.encode(draw(st.sampled_from(ENCODINGS)), errors="replace")
    if kind == "flip":
        data = bytearray(original)
        for _ in range(draw(st.integers(1, 8))):
            at = draw(st.integers(0, len(data) - 1))
            data[at] = draw(st.integers(0, 255))
        return bytes(data)
    return draw(st.binary(max_size=400))


def run_all(root: Path) -> list[tuple[list[str], int, str]]:
    results = []
    for args in COMMANDS:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = run([*args, "--vault", str(root)])
        results.append((args, code, err.getvalue()))
    return results


@contextlib.contextmanager
def sample_vault():
    """A vault with a sealed ruling, an open question and a hand-written ruling (D-0002)."""
    base = Path(tempfile.mkdtemp(prefix="vault-tools-fuzz-"))
    try:
        root = make_vault(base / "vault")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert run(["rule", "--topic", "article-footer", "--summary", "Footers carry the newsletter link.",
                        "--vault", str(root)]) == 0
            assert run(["ask", "Should the footer show the author bio?", "--topic", "author-bio",
                        "--not-the-same", "D-0001", "--vault", str(root)]) == 0
        decision(root, 3, topics=("image-policy",), supersedes=f'["[[{made_id(root, "D-0001")} Footers carry the newsletter link]]"]',
                 reason="The owner changed their mind after the reader survey.")
        yield root
    finally:
        shutil.rmtree(base, ignore_errors=True)


def assert_no_internal_error(results: list[tuple[list[str], int, str]]) -> None:
    for args, code, err in results:
        assert code != 4, f"vault-tools {' '.join(args)} crashed: {err}"
        if code not in (0, 1):
            assert "Traceback" not in err, err


FUZZ_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.soak  # randomized: runs with the soak tests (`make soak-ci` in CI)
@pytest.mark.parametrize("target", ["question note", "ruling note", "ledger", "config"])
def test_damaged_input_never_crashes_the_command_line(target: str) -> None:
    @FUZZ_SETTINGS
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        with sample_vault() as root:
            path = {"question note": note_path(root, "D-0002"),
                    "ruling note": root / "Decisions" / "D-0003 Note.md",
                    "ledger": ledger_file(root),
                    "config": config_file(root)}[target]
            path.write_bytes(data.draw(damaged(path.read_bytes())))
            assert_no_internal_error(run_all(root))

    check()
