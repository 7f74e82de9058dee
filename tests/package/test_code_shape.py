"""The shape of the package: no hidden compile caches, functions short enough to read."""

import ast
import inspect
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "jaxzero"
MAX_BODY_LINES = 60


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``node``'s body without its docstring, nested functions and classes
    included: a closure is read as part of the function that makes it."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body:
        return 0
    first = body[0]
    start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))])
    return body[-1].end_lineno - start + 1


def _functions(node: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function under ``node``, nested ones included
    (``make_step.step``, ``Checkpointer.save``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                yield name, child
            yield from _functions(child, f"{name}.")
        else:
            yield from _functions(child, prefix)


def _lengths() -> dict[str, int]:
    """Body lines of every function of the package, by ``path:qualified.name``."""
    lengths = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name, node in _functions(ast.parse(path.read_text())):
            lengths[f"{path.relative_to(PACKAGE.parent).as_posix()}:{name}"] = _body_lines(node)
    return lengths


def test_no_function_body_is_longer_than_sixty_lines():
    long = {name: n for name, n in _lengths().items() if n > MAX_BODY_LINES}
    assert not long, long


def test_nested_functions_count_toward_their_enclosing_function():
    tree = ast.parse(
        "def outer():\n    x = 1\n    def inner():\n        return 2\n    return inner\n"
    )
    found = dict(_functions(tree))
    assert set(found) == {"outer", "outer.inner"}
    assert _body_lines(found["outer"]) == 4 and _body_lines(found["outer.inner"]) == 1


def test_no_hidden_compile_cache():
    """Whoever compiles keeps the result: no lru_cache keyed on closures or envs. (The
    tic-tac-toe solver's table, a numpy array, is computed once per process.)"""
    allowed = {"jaxzero/games/tic_tac_toe/solver.py"}
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


def test_help_and_type_checkers_see_every_public_name():
    import pydoc

    import jaxzero

    page = pydoc.render_doc(jaxzero, renderer=pydoc.plaintext)
    source = (PACKAGE / "__init__.py").read_text()
    checked = source[source.index("if TYPE_CHECKING:") : source.index("_EXPORTS = {")]
    for name in jaxzero.__all__:
        if name != "__version__":
            assert name in page, name  # help(jaxzero) lists it
            assert re.search(rf"\b{name}\b", checked), name  # a type checker imports it


def _missing_sections(function, skip: frozenset[str] = frozenset()) -> list[str]:
    """The sections ``function``'s docstring lacks: "Args:" when it takes a parameter
    (other than those in ``skip``), "Returns:" when its return annotation is not None."""
    signature = inspect.signature(function)
    doc = inspect.getdoc(function) or ""
    missing = []
    if any(name not in skip for name in signature.parameters) and "Args:" not in doc:
        missing.append("Args:")
    if signature.return_annotation not in (None, "None") and "Returns:" not in doc:
        missing.append("Returns:")
    return missing


def _public_methods(cls: type):
    """The public methods ``cls`` defines itself (not inherited), protocols' included;
    ``__call__`` counts as public (it is a Player's, Hook's or ApplyFn's whole contract)."""
    for name, value in vars(cls).items():
        if name == "replace" or (name.startswith("_") and name != "__call__"):
            continue
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if inspect.isfunction(value):
            yield name, value


def test_every_public_function_documents_its_arguments_and_result():
    """Google-style docstrings on the public surface: every function says its arguments
    under "Args:" and its result under "Returns:"; every class has a docstring of its
    own (not the signature a dataclass writes) and its public methods follow the rule
    of functions."""
    import jaxzero

    missing = {}
    for name in jaxzero.__all__:
        if name == "__version__":
            continue
        obj = getattr(jaxzero, name)
        if not inspect.isclass(obj):
            missing[name] = _missing_sections(obj)
            continue
        doc = (obj.__doc__ or "").strip()
        missing[name] = [] if doc and not doc.startswith(f"{name}(") else ["a docstring"]
        for method, function in _public_methods(obj):
            missing[f"{name}.{method}"] = _missing_sections(function, frozenset({"self", "cls"}))
    missing = {name: lacks for name, lacks in missing.items() if lacks}
    assert not missing, "; ".join(
        f"{name} lacks {', '.join(lacks)}" for name, lacks in missing.items()
    )
