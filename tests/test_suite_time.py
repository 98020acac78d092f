"""`scripts/suite_time.py`: where the suite's processor time goes, summed by module from what each worker wrote."""
from __future__ import annotations

import json

from .helpers import REPOSITORY, load_script


def test_the_modules_are_summed_and_the_costliest_comes_first(tmp_path, monkeypatch, capsys):
    rows = {"cpu-1.jsonl": [("tests/test_a.py::one", 0.5, 2.0), ("tests/test_b.py::one", 0.25, 0.0)],
            "cpu-2.jsonl": [("tests/test_a.py::two", 0.25, 0.25), ("tests/test_b.py::two[x]", 0.5, 0.0)]}
    for name, tests in rows.items():
        (tmp_path / name).write_text("".join(json.dumps({"test": test, "own": own, "children": children}) + "\n"
                                             for test, own, children in tests), encoding="utf-8")
    suite_time = load_script(REPOSITORY / "scripts" / "suite_time.py", "suite_time", monkeypatch)
    suite_time.main(tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "4 tests: 2 s in the test processes, 2 s in the processes they started and waited for"
    assert lines[2].split() == ["3.0", "0.8", "2.2", "2", "tests/test_a.py"]
    assert lines[3].split() == ["0.8", "0.8", "0.0", "2", "tests/test_b.py"]


def test_a_folder_without_times_is_one_line_saying_what_to_run(tmp_path, monkeypatch):
    suite_time = load_script(REPOSITORY / "scripts" / "suite_time.py", "suite_time", monkeypatch)
    try:
        suite_time.main(tmp_path / "none")
    except SystemExit as stop:
        said = str(stop.code)
    assert said.startswith("suite_time: no test's time in ") and "make test" in said and "\n" not in said
