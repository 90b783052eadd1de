"""The package's shape: no import cycles between modules (counting imports inside functions and
those for the type checker only), no private name used across modules, an options leaf that
imports nothing but the error types and the hashes, and a core package whose modules live in the
sub-package of their role (at most ``MAX_TOP_LEVEL`` directly in ``verified_tts/``)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("verified_tts", "verifiers", "jobs")

# Modules directly in verified_tts/ (not counting __init__ and __main__): more than this and
# the sub-packages stop showing the architecture.
MAX_TOP_LEVEL = 15

LEAF = "verified_tts.options"
LEAF_MAY_IMPORT = {"verified_tts.errors", "verified_tts.storage.keys"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _tree(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once for all the checks while its text is the same
    (parsing the project is most of their time)."""
    return _parsed(path.read_text(encoding="utf-8"))


@functools.cache
def _parsed(source: str) -> ast.Module:
    return ast.parse(source)


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The module a ``from`` import names, relative ones (``from . import x``) resolved."""
    if node.level == 0:
        return node.module or ""
    parts = importer.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(path: Path, modules: dict[str, Path], importer: str = "") -> set[str]:
    """Project modules that ``path`` imports anywhere (inside functions and under
    ``TYPE_CHECKING`` too, relative imports resolved from ``importer``), resolved to the deepest
    module named."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or node.level):
            module = _absolute(node, importer, path.name == "__init__.py")
            names = [f"{module}.{alias.name}" for alias in node.names] + [module]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return components


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: _imports(path, modules, name) - {name} for name, path in modules.items()}
    # a package's __init__ re-exporting its own modules is not a cycle between modules
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    return graph


def _defined(tree: ast.AST) -> set[str]:
    """Every name a module defines or binds: functions, classes, attributes, variables."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_uses() -> set[tuple[str, str]]:
    """(module, name) for each private name a module reaches in another project module: a
    ``from x import _name``, or ``obj._name`` (not on self or cls) where ``_name`` is defined in
    another module of the project and not in this one."""
    modules = _modules()
    trees = {name: _tree(path) for name, path in modules.items()}
    defined = {name: _defined(tree) for name, tree in trees.items()}
    owners: dict[str, set[str]] = {}
    for name, names in defined.items():
        for private in filter(_private, names):
            owners.setdefault(private, set()).add(name)
    found: set[tuple[str, str]] = set()
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module and node.module.split(".")[0] in PACKAGES)
            ):  # a relative import is always of the project
                found |= {(name, a.name) for a in node.names if _private(a.name)}
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and _private(node.attr)
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and node.attr not in defined[name]
                and owners.get(node.attr, set()) - {name}
            ):
                found.add((name, node.attr))
    return found


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_no_private_name_is_used_across_modules():
    assert _private_uses() == set()


def test_the_options_leaf_imports_only_errors_and_keys():
    graph = _graph()
    leaf = {name for name in graph if name == LEAF or name.startswith(LEAF + ".")}
    reached = set().union(*(graph[name] for name in leaf)) - leaf
    assert reached <= LEAF_MAY_IMPORT
    for name in LEAF_MAY_IMPORT:  # and those import nothing of the project
        assert graph[name] == set()


def _top_level(package: Path) -> list[str]:
    return sorted(p.stem for p in package.glob("*.py") if not p.stem.startswith("__"))


def test_the_core_package_keeps_its_modules_in_packages_by_role():
    loose = _top_level(ROOT / "verified_tts")
    assert len(loose) <= MAX_TOP_LEVEL, loose
    # choosing a winner and keeping what was made are packages, not loose modules
    for package, members in {
        "selection": ("policy", "strategy", "best_of_n", "beam_search", "scoring", "reasons"),
        "storage": ("store", "keys", "atomic", "results"),
    }.items():
        assert set(members) <= set(_top_level(ROOT / "verified_tts" / package)), package


def test_the_checks_see_what_they_look_for(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    # an import only the type checker sees is an edge too
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from verified_tts import keys\n"
    )
    assert _imports(source, {"verified_tts.keys": source}) == {"verified_tts.keys"}
    # so is a relative import, from a module and from a package's __init__
    source.write_text("from . import keys\nfrom ..jobs import spec\n")
    known = {"verified_tts.keys": source, "jobs.spec": source}
    assert _imports(source, known, "verified_tts.cli") == {"verified_tts.keys", "jobs.spec"}
    package = tmp_path / "__init__.py"
    package.write_text("from .keys import KEY\n")
    assert _imports(package, known, "verified_tts") == {"verified_tts.keys"}
    for name in ("a", "b", "__init__"):
        (tmp_path / f"{name}.py").write_text("")
    assert _top_level(tmp_path) == ["a", "b", "m"]
    tree = ast.parse("x._hidden()\nself._own = 1\n")
    assert "_own" in _defined(tree) and "_hidden" not in _defined(tree)
