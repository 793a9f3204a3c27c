"""The import contract of the package: its parts stand in layers, and every import, at module level or inside a
function, points down a layer (or stays inside its part); parts of one layer are independent; no module imports
itself back through others (no cycle, inside a part or in fuzz/ and bench/). docs/development.md draws the same
layers, and the drawing is checked against them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "i6_rc_jobs"

#: The layers, top first; a part is a subpackage or a module of i6_rc_jobs. Parts of one layer do not import each
#: other. ``__init__`` (the public API) and ``__main__`` load their parts by name (``importlib``), which no arrow shows.
LAYERS: list[tuple[str, ...]] = [
    ("__main__", "__init__"),
    ("_cli",),
    ("serializers", "_code_hash", "versioned"),
    ("jobs",),
    ("_hashing", "_builds"),
    ("_serialization", "_imports", "_verify", "_computation"),
    ("_compat",),
    ("_util",),
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path) -> list[tuple[int, str]]:
    """Every module (or package) that the file imports, by absolute name, with the line: relative imports resolved,
    ``from a import b`` taken as ``a.b`` where ``b`` is a module of the tree, at any depth of the code."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                module = candidate if _exists(candidate, root) else base
                found.append((node.lineno, module))
    return found


def _exists(module: str, root: Path) -> bool:
    relative = Path(*module.split(".")[1:])
    return (root / relative).with_suffix(".py").is_file() or (root / relative / "__init__.py").is_file()


def _part(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _graph(root: Path) -> dict[str, set[str]]:
    """Each module of the tree and the modules of the tree it imports."""
    top = root.name
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        name = _module_name(path, root)
        graph[name] = {m for _, m in _imports(path, root) if (m == top or m.startswith(top + ".")) and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in graph:
                continue
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
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_part_of_the_package_has_a_layer():
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    parts -= {"__pycache__"}
    assert parts == set(RANK), "a part without a layer (add it to LAYERS and docs/development.md), or a stale one"


def test_every_import_points_down_or_stays_in_its_part():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path, PACKAGE)
        for line, module in _imports(path, PACKAGE):
            if not module.startswith("i6_rc_jobs.") or _part(module) == _part(importer):
                continue
            if _part(importer) in ("__init__", "__main__") and module.startswith("i6_rc_jobs._compat."):
                continue  # (the public API installs the finder of moved modules)
            if RANK[_part(module)] <= RANK[_part(importer)]:
                how = "sideways" if RANK[_part(module)] == RANK[_part(importer)] else "up"
                wrong.append(f"{path.relative_to(REPO)}:{line}: imports {module} ({how})")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("tree", ["i6_rc_jobs", "fuzz", "bench"])
def test_no_module_imports_itself_back(tree):
    assert _cycles(_graph(REPO / tree)) == []


def test_the_checker_sees_what_it_must_refuse(tmp_path):
    """The contract's checker itself: an upward import inside a function and a two-module cycle are found."""
    root = tmp_path / "pkg"
    (root / "low").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "low" / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text("def f():\n    from pkg.low import b\n")
    (root / "low" / "b.py").write_text("from . import a\n")
    (root / "high.py").write_text("")
    assert _cycles(_graph(root)) == [["pkg.low.a", "pkg.low.b"]]
    assert (3, "pkg.high") in _imports(
        _write(root / "low" / "c.py", "def g():\n    x = 1\n    from .. import high\n"), root
    )


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_the_development_page_draws_these_layers():
    text = (REPO / "docs" / "development.md").read_text()
    drawing = re.search(r"<!-- layers -->\n```text\n(.*?)```", text, re.S)
    assert drawing, "docs/development.md lacks its drawing of the layers (<!-- layers --> then a text block)"
    drawn = [tuple(re.findall(r"[\w.]+(?=/| |$)", line.split("  ")[0])) for line in drawing.group(1).splitlines()]
    assert [tuple(part.removesuffix(".py") for part in parts) for parts in drawn] == LAYERS
