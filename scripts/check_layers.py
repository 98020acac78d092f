"""The layers contract: each module of `vault_tools` imports only modules of its own layer or below, no import
cycle ties modules together, and each module is of one concern (a docstring that says it; no module over 600
lines, no function over 80 and at most five over 60). `make check` runs it; it prints each breach and exits 1.

Layers, lowest first (docs/architecture.md says what each is for): leaves, domain, storage, operations,
engines, faces. Imports under `if TYPE_CHECKING:` are not imports at run time and are not counted, but for
cycles: no two modules import each other, even only to name each other's types.
Function-level imports count like any other (they only defer the cost); their number, and the number of
those without a reason on their line or the one above (a comment: start-up time is the only reason to
have one), may not grow past the ceilings below.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "vault_tools"
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("leaves", ("errors", "record_files", "resident_address", "page_names", "rule_codes", "scope", "bodies", "carriers", "handover", "cjk", "matter", "code_stamp", "vault_root",
                "__init__", "agents.__init__")),
    ("domain", ("model", "links", "topics", "ruling_graph", "drafts", "dates", "notes", "durable", "note_edits", "pages", "agent_view", "topic_aliases", "ledger_lines", "history", "meaning", "record_ties", "conflicts", "decision_words")),
    ("storage", ("layout", "config", "ledger", "ledger_file", "ledger_memo", "ledger_lock", "reading", "state_memo", "vault", "vault_walk", "folder_watch", "index")),
    ("services", ("services",)),
    ("operations", ("commands", "importers", "starter", "figures", "shapes", "agents.instructions", "agents.json_edit")),
    ("engines", ("watch", "reconcile", "lint", "tripwire")),
    ("faces", ("cli", "console", "answers", "recording", "launch", "resident", "resident_process", "docs", "agents", "__main__")),
]
# Imports inside functions: at most 90 in all, each with its reason written beside it (start-up time is the only
# good one: what a hook or a quick command does not need waits until it is needed).
# A module whose every import inside a function has the same reason says it once, in a line starting so.
MODULE_REASON = "# Imports inside functions:"
MAX_LINES = 600  # no module longer
MAX_FUNCTION_LINES = 80  # no function longer (nested functions count in the one that holds them)
LONG_FUNCTION_LINES = 60  # and at most MAX_LONG_FUNCTIONS longer than this
MAX_LONG_FUNCTIONS = 5
MAX_FUNCTION_IMPORTS = 90
MAX_WITHOUT_REASON = 0


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts)


def layer_of(name: str) -> int:
    best: tuple[int, int] | None = None  # (length of the matching prefix, layer)
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = name == prefix or name.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), number)
    if best is None:
        raise SystemExit(f"check_layers: vault_tools/{name.replace('.', '/')}.py is in no layer: add it to LAYERS")
    return best[1]


def _import_nodes(tree: ast.Module, type_only: bool = False) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import run at run time (and with `type_only`, those under `if TYPE_CHECKING:` too), each with whether
    it is inside a function: one pass over the tree."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, in_function))
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack += [(child, in_function) for child in node.orelse]
            if type_only:
                found += [(child, in_function) for child in node.body if isinstance(child, ast.Import | ast.ImportFrom)]
            continue
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        if isinstance(node, ast.stmt | ast.Module | ast.ExceptHandler | ast.match_case):
            stack += [(child, inside) for child in ast.iter_child_nodes(node)
                      if isinstance(child, ast.stmt | ast.ExceptHandler | ast.match_case)]
    return found


def imports(path: Path, modules: set[str], type_only: bool = False) -> tuple[list[tuple[int, str]], list[int]]:
    """(line, module) for each import of a vault_tools module at run time (with `type_only`, and for type checking);
    the lines of function-level ones."""
    name = module_name(path)
    package = ".".join(name.split(".")[:-1])  # a package's own __init__ counts as in that package
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    nested: list[int] = []
    for node, in_function in _import_nodes(tree, type_only):
        if in_function:
            nested.append(node.lineno)
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                stem = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.startswith("vault_tools"):
                stem = node.module.removeprefix("vault_tools").lstrip(".")
            else:
                continue
            for alias in node.names:
                full = f"{stem}.{alias.name}" if stem else alias.name
                targets.append(full if full in modules else stem)
        else:
            targets = [a.name.removeprefix("vault_tools.") for a in node.names if a.name.startswith("vault_tools.")]
        found += [(node.lineno, target if target in modules else f"{target}.__init__") for target in targets
                  if target and (target in modules or f"{target}.__init__" in modules)]
    return found, sorted(nested)


def main() -> int:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    breaches: list[str] = []
    graph: dict[str, set[str]] = {}
    function_level = 0
    unexplained: list[str] = []
    for path in paths:
        name = module_name(path)
        found, nested = imports(path, modules)
        lines = path.read_text(encoding="utf-8").splitlines()
        function_level += len(nested)
        module_reason = any(text.startswith(MODULE_REASON) for text in lines)
        for line in nested:
            if not module_reason and not _explained(lines, line):
                unexplained.append(f"vault_tools/{path.relative_to(PACKAGE)}:{line}")
        for line, target in found:
            if target == name:
                continue
            graph.setdefault(name, set()).add(target)
            if layer_of(target) > layer_of(name):
                breaches.append(f"vault_tools/{path.relative_to(PACKAGE)}:{line}: {LAYERS[layer_of(name)][0]} module "
                                f"{name} imports {target}, of the {LAYERS[layer_of(target)][0]} layer above it")
    typed: dict[str, set[str]] = {}  # the same graph with the imports made for type checking only
    for path in paths:
        name = module_name(path)
        typed[name] = {target for _, target in imports(path, modules, type_only=True)[0] if target != name}
    breaches += [f"import cycle: {' -> '.join(cycle)}" for cycle in _cycles(typed)]
    breaches += _shape(paths)
    if function_level > MAX_FUNCTION_IMPORTS:
        breaches.append(f"{function_level} imports inside functions; at most {MAX_FUNCTION_IMPORTS} (start-up time "
                        "is the only reason for one)")
    if len(unexplained) > MAX_WITHOUT_REASON:
        breaches.append(f"{len(unexplained)} imports inside functions have no reason given (a comment on their line "
                        f"or the one above); at most {MAX_WITHOUT_REASON}: give the new ones theirs "
                        "(`--list` names them all)")
    if "--list" in sys.argv:
        breaches += [f"{where}: an import inside a function with no reason given" for where in unexplained]
    for breach in breaches:
        print(breach)
    print(f"check_layers: {len(modules)} modules, {sum(map(len, graph.values()))} imports, {function_level} inside "
          f"functions ({len(unexplained)} without a reason): {len(breaches)} breach(es)")
    return 1 if breaches else 0


def _explained(lines: list[str], line: int) -> bool:
    """Whether an import inside a function says why: a comment on its line, or on a line of the block of imports
    it closes, or on the line above that block."""
    at = line - 1
    while at >= 0:
        text = lines[at].strip()
        if "#" in text:
            return True
        if not text.startswith(("import ", "from ", ")")) and not (text.endswith(",") or text.endswith("(")):
            return False
        at -= 1
    return False


def _shape(paths: list[Path]) -> list[str]:
    """Each module opens with a docstring saying its one concern; none is over MAX_LINES lines. (A count of
    modules over 450 lines was dropped: it decided where code went, not what belonged together.)"""
    found = []
    lengths = {}
    long_functions = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        shown = f"vault_tools/{path.relative_to(PACKAGE)}"
        if not text.startswith('"""'):
            found.append(f"{shown}:1: no docstring saying the module's one concern")
        lengths[shown] = text.count("\n")
        if lengths[shown] > MAX_LINES:
            found.append(f"{shown}: {lengths[shown]} lines; at most {MAX_LINES}: split it by concern")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    found.append(f"{shown}:{node.lineno}: {node.name} is {size} lines; at most {MAX_FUNCTION_LINES}")
                elif size > LONG_FUNCTION_LINES:
                    long_functions.append(f"{shown}:{node.lineno}: {node.name} ({size} lines)")
    if len(long_functions) > MAX_LONG_FUNCTIONS:
        found.append(f"{len(long_functions)} functions over {LONG_FUNCTION_LINES} lines; at most {MAX_LONG_FUNCTIONS}: "
                     + ", ".join(long_functions))
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop through each group of modules that import one another (Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


if __name__ == "__main__":
    sys.exit(main())
