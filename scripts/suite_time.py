"""Where the test suite's processor time goes, by module: reads what `VAULT_TOOLS_TEST_CPU=FOLDER make test`
wrote (each test's own processor time and its waited-for children's) and prints the modules that use most.

    mkdir -p /tmp/cpu && VAULT_TOOLS_TEST_CPU=/tmp/cpu make test && python scripts/suite_time.py /tmp/cpu
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def main(folder: Path, shown: int = 25) -> None:
    own: Counter[str] = Counter()
    children: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for path in sorted(folder.glob("cpu-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            module = row["test"].split("::")[0]
            own[module] += row["own"]
            children[module] += row["children"]
            tests[module] += 1
    if not tests:
        raise SystemExit(f"suite_time: no test's time in {folder}: run `VAULT_TOOLS_TEST_CPU={folder} make test` first")
    whole = own + children
    print(f"{sum(tests.values())} tests: {sum(own.values()):.0f} s in the test processes, "
          f"{sum(children.values()):.0f} s in the processes they started and waited for")
    print(f"{'seconds':>8} {'own':>6} {'children':>8} {'tests':>5}  module")
    for module, seconds in whole.most_common(shown):
        print(f"{seconds:8.1f} {own[module]:6.1f} {children[module]:8.1f} {tests[module]:5d}  {module}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), *(int(value) for value in sys.argv[2:3]))
