"""The import contract: data flows one way through pa's layers (docs/architecture.md).

Every `import pa.X` / `from pa.X import …` in every module, including the lazy imports
inside functions, is read from the source with `ast` (nothing is imported), and each must point to
its own layer or a lower one; an import of a higher layer fails here with the offending line. The
top-level units (a package, or a module directly under pa/) must also import each other
without a cycle, inside a layer too (e.g. the base modules, the CLI modules).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parent.parent / "pa"

# Lowest first. A module may import its own package and any package of a lower layer.
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"errors", "controls", "inputs", "paths", "sandbox", "formatting", "config", "version",
              "nsys_report"}),
    ("profile", {"profile"}),
    ("metrics", {"metrics"}),
    ("ranks", {"ranks"}),
    ("rules", {"rules"}),
    ("llm", {"llm"}),
    ("report", {"report", "summary_render"}),
    ("compare", {"compare"}),
    ("pipeline", {"pipeline", "api", "example_profile", "agent_tools", "__init__"}),   # __init__: the notebook API
    ("cli", {"cli", "cli_analyze", "cli_compare", "cli_output", "cli_ranks", "cli_rules", "cli_queries",
             "cli_config", "cli_example", "cli_options", "cli_summary", "cli_mcp", "cli_skill", "mcp_server",
             "__main__"}),
]
# The test world (planted scenarios, vendors' writers: tests/testkit) is never imported by the product.
TEST_WORLD = {"synth", "testkit", "accuracy"}
TEST_PACKAGES = {"tests", "testkit", "conftest", "reference", "fakes", "llm_world"}
# `pa.llm.cli_options` holds click option declarations for the CLI; it imports click only.
CLI_MODULES_INSIDE_PACKAGES = {"llm/cli_options.py"}


def _layer_of(package: str) -> int:
    for i, (_name, members) in enumerate(LAYERS):
        if package in members:
            return i
    raise AssertionError(f"pa.{package} is in no layer: add it to LAYERS and docs/architecture.md")


def _package(rel: Path) -> str:
    """pa/metrics/gaps.py → metrics; pa/cli.py → cli."""
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _engine_imports(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "pa"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pa":
                found += [(node.lineno, f"pa.{a.name}" if _is_module(a.name) else "pa")
                          for a in node.names]
            elif node.module.startswith("pa."):
                found.append((node.lineno, node.module))
    return found


def _is_module(name: str) -> bool:
    return (ENGINE / name).is_dir() or (ENGINE / f"{name}.py").is_file()


def _modules() -> list[Path]:
    return sorted(p.relative_to(ENGINE) for p in ENGINE.rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    for rel in _modules():
        _layer_of(_package(rel))


@pytest.mark.parametrize("rel", _modules(), ids=lambda p: p.as_posix())
def test_imports_point_down_the_layers(rel: Path) -> None:
    own = _package(rel)
    tree = ast.parse((ENGINE / rel).read_text(), filename=str(rel))
    problems = []
    for line, target in _engine_imports(tree):
        parts = target.split(".")
        pkg = parts[1] if len(parts) > 1 else "__init__"
        if pkg in TEST_WORLD or (len(parts) > 2 and parts[-1] in TEST_WORLD):
            problems.append(f"{rel}:{line} imports the test world ({target})")
            continue
        if pkg == own:
            continue
        if rel.as_posix() in CLI_MODULES_INSIDE_PACKAGES:
            problems.append(f"{rel}:{line} is a CLI declaration module and imports {target}")
            continue
        mine, theirs = _layer_of(own), _layer_of(pkg)
        if theirs > mine:
            problems.append(f"{rel}:{line} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]}): "
                            "data flows the other way")
    assert not problems, "\n".join(problems)


def _unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for rel in _modules():
        own = _package(rel)
        edges = graph.setdefault(own, set())
        for _line, target in _engine_imports(ast.parse((ENGINE / rel).read_text())):
            parts = target.split(".")
            pkg = parts[1] if len(parts) > 1 else "__init__"
            if pkg != own and pkg not in TEST_WORLD:
                edges.add(pkg)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle between top-level units, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_no_import_cycle_between_packages() -> None:
    found = _cycle(_unit_graph())
    assert found is None, "import cycle: " + " -> ".join(found or [])


def test_no_product_module_imports_the_tests() -> None:
    """tests/testkit (writers, planted scenarios, accuracy) and the test helpers stay out of the product."""
    problems = []
    for rel in _modules():
        for node in ast.walk(ast.parse((ENGINE / rel).read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            problems += [f"{rel}:{node.lineno} imports {n}" for n in names if n.split(".")[0] in TEST_PACKAGES]
    assert not problems, "\n".join(problems)


def test_the_cycle_finder_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_contract_catches_an_upward_import() -> None:
    """The checker itself: an upward import and a test-world import are both reported."""
    tree = ast.parse("from pa.report.render import render\nimport pa.synth.scenarios\n")
    imports = _engine_imports(tree)
    assert imports == [(1, "pa.report.render"), (2, "pa.synth.scenarios")]
    assert _layer_of("metrics") < _layer_of("report")
