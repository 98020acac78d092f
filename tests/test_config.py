"""Reading the config: the quick way (libyaml, YAML 1.2's core schema) answers only where ruamel.yaml, which
reads everything else, would read the same values on the same lines."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import SCALARS, typed
from vault_tools.config import _parse_config, _parse_config_fully, _quick_config, load_config
from vault_tools.errors import ConfigError

CONFIG_KEYS = ["timezone", "seal_delay_seconds", "decisions_folder", "harvest_on_change", "budget", "lint", "1", "true",
               "<<", '"quoted key"', "x y", "? [a]"]
NUMBERS = ["0", "120", "08", "012", "-3", "+4", "1_000", "0b11", "0o17", "0x1f", "1.5", "1.", ".5", "1e3", "1E3",
           ".5e3", "-.inf", ".NaN", "12:30", "2026-07-17", "2026-07-17 08:30:00", "=", "<<", "~", "Yes", "off"]


def as_python(value):
    """ruamel.yaml's values as plain Python values (its maps, lists and numbers are subclasses)."""
    if isinstance(value, dict):
        return {as_python(k): as_python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_python(v) for v in value]
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


@st.composite
def configs(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        key = draw(st.sampled_from(CONFIG_KEYS))
        value = st.sampled_from(SCALARS + NUMBERS)
        shape = draw(st.sampled_from(["scalar", "block map", "block list", "comment", "directive"]))
        if shape == "scalar":
            lines.append(f"{key}: {draw(value)}")
        elif shape == "block map":
            lines += [f"{key}:"] + [f"  {draw(st.sampled_from(CONFIG_KEYS))}: {draw(value)}"
                                    for _ in range(draw(st.integers(0, 3)))]
        elif shape == "block list":
            lines += [f"{key}:"] + [f"  - {draw(value)}" for _ in range(draw(st.integers(0, 2)))]
        else:
            lines.append("# a comment" if shape == "comment" else "%YAML 1.1\n---")
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


def quick_and_full(text: str):
    quick = _quick_config(text)
    if quick is None:
        return None, None
    try:
        full, line_of = _parse_config_fully(text, "config.yaml")
    except ConfigError as error:
        pytest.fail(f"the quick way read what ruamel.yaml refuses ({error}): {text!r}")
    data, lines = quick
    return (typed(data), lines), (typed(as_python(full)), {key: line_of(key) for key in full or {}})


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=configs())
def test_the_quick_way_reads_a_config_as_ruamel_yaml_does_wherever_it_answers(text):
    quick, full = quick_and_full(text)
    assert quick == full, text


@pytest.mark.parametrize("text", ["timezone: UTC\nseal_delay_seconds: 5\n", "seal_delay_seconds: 0.5\ndebounce_ms: 08\n",
                                  "lint:\n  VT043: off\nbudget:\n  lines: 100\n", "harvest_on_change: true\n",
                                  "decisions_folder: 'Work decisions'  # quoted\n", "timezone: Asia/Tokyo\n"])
def test_the_settings_people_write_take_the_quick_way(text):
    quick, full = quick_and_full(text)
    assert quick is not None and quick == full


@pytest.mark.parametrize(("text", "message", "line"), [
    ("seal_delay_seconds: 1_000\n", None, None),  # ruamel.yaml reads 1000: so do we
    ("decisions_folder: 2024-01-01\n", "decisions_folder must be str, not datetime.date(2024, 1, 1)", 1),
    ("timezone: UTC\nbudget:\n  lines: 100\n  lines: 200\n", "invalid YAML: found duplicate key \"lines\"", 4),
    ("timezone: UTC\ntimezone: UTC\n", "invalid YAML: found duplicate key \"timezone\"", 2),
    ("harvest_on_change: yes\n", "harvest_on_change must be bool, not 'yes'", 1),
    ("%YAML 1.1\n---\nharvest_on_change: yes\n", None, None),  # YAML 1.1, as the file asks: `yes` is true
    ("timezone: [UTC\n", "invalid YAML: expected ',' or ']'", 2),
    ("- a\n- b\n", "must be a mapping of settings", None),
    ("timezone: UTC\n1: x\n", "unknown key 1", 2),
])
def test_a_config_the_quick_way_leaves_is_read_and_refused_as_before(tmp_path, text, message, line):
    config = tmp_path / ".vault-tools" / "config.yaml"
    config.parent.mkdir()
    config.write_text(text)
    if message is None:
        load_config(tmp_path)
        return
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    assert refused.value.message.startswith(message) and refused.value.line == line


def test_a_plain_config_is_read_without_importing_ruamel_yaml(tmp_path):
    """ruamel.yaml costs more to import than the whole read of a plain config, on every command that finds no
    config in its cache (a fresh clone, CI)."""
    (tmp_path / ".vault-tools").mkdir()
    (tmp_path / ".vault-tools" / "config.yaml").write_text("timezone: Asia/Tokyo\nseal_delay_seconds: 30\n")
    code = ("import sys; from pathlib import Path; from vault_tools.config import load_config; "
            f"c = load_config(Path({str(tmp_path)!r})); print(c.timezone, c.seal_delay_seconds, 'ruamel' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           cwd=Path(__file__).resolve().parent.parent).stdout
    assert shown.split() == ["Asia/Tokyo", "30.0", "False"]


def test_parse_config_names_each_keys_line_either_way():
    text = "# settings\ntimezone: UTC\n\nbudget:\n  lines: 100\n"
    for parsed in (_parse_config(text.encode(), "c.yaml"), _parse_config_fully(text, "c.yaml")):
        _, line_of = parsed
        assert (line_of("timezone"), line_of("budget")) == (2, 4)


@pytest.mark.parametrize("text", [
    "seal_delay_seconds: 5\x85debounce_ms: 9\n",  # NEL: a line break to libyaml only
    "# team settings\u2028\ntimezone: Asia/Tokyo\nseal_delay_seconds: -1\n",  # LS: every later line shifts
    "# c\n\ufefftimezone: Asia/Tokyo\n",  # a BOM that is not the first character
    "seal_delay_seconds: 5\n\ufeff",
    "decisions_folder: !\n",  # a bare tag on nothing: text to libyaml, nothing to ruamel.yaml
    "decisions_folder: |# the folder\n  Work\n",  # a block scalar's header running into a comment
    "timezone: UTC\rseal_delay_seconds: 5\r",  # a CR alone
])
def test_what_libyaml_reads_otherwise_is_left_to_ruamel_yaml(tmp_path, text):
    assert _quick_config(text) is None
    config = tmp_path / ".vault-tools" / "config.yaml"
    config.parent.mkdir()
    config.write_bytes(text.encode("utf-8"))
    try:
        full, _ = _parse_config_fully(text, "config.yaml")
    except ConfigError as refused:
        with pytest.raises(ConfigError) as error:
            load_config(tmp_path)
        assert (error.value.message, error.value.line) == (refused.message, refused.line)
        return
    assert full is not None
