"""The codes of the lint rules, for what must know them without loading the rules (the config reader).

Each code here has exactly one rule in `lint/` (registering one not listed fails, and a test checks that
every listed one is registered). Add a rule's code here when you add the rule.
"""
from __future__ import annotations

RULE_CODES = (
    "VT001", "VT002", "VT003", "VT004", "VT005", "VT006", "VT007", "VT008", "VT009", "VT010",
    "VT011", "VT012", "VT013", "VT014", "VT015", "VT016",
    "VT020", "VT021", "VT022", "VT023", "VT024", "VT025", "VT026", "VT027", "VT029",
    "VT030", "VT031", "VT032", "VT033",
    "VT040", "VT041", "VT042", "VT043", "VT044", "VT045",
    "VT050", "VT051", "VT052", "VT053", "VT054", "VT055", "VT056", "VT057",
)
