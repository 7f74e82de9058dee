"""The shape of the package: no hidden compile caches, functions short enough to read."""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jaxzero"
MAX_BODY_LINES = 60


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``node``'s body without its docstring and without nested functions and
    classes (a closure counts on its own, not inside its factory)."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body:
        return 0
    lines = set(range(body[0].lineno, body[-1].end_lineno + 1))
    for child in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            lines -= set(range(child.lineno, child.end_lineno + 1))
    return len(lines)


def _functions():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}", node


def test_no_function_body_is_longer_than_sixty_lines():
    long = {name: n for name, node in _functions() if (n := _body_lines(node)) > MAX_BODY_LINES}
    assert not long, long


def test_no_hidden_compile_cache():
    """Whoever compiles keeps the result: no lru_cache keyed on closures or envs. (The
    tic-tac-toe solver's table, a numpy array, is computed once per process.)"""
    allowed = {"jaxzero/measure/solvers/tic_tac_toe.py"}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE.parent))
        text = path.read_text()
        assert "lru_cache" not in text, name
        if name not in allowed:
            assert not re.search(r"functools\.cache\b|@cache\b", text), name


def test_the_public_api_resolves():
    import jaxzero

    assert jaxzero.__all__ == sorted(jaxzero.__all__)
    for name in jaxzero.__all__:
        assert getattr(jaxzero, name) is not None, name
