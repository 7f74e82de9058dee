"""Our docstrings' Sphinx roles as links in the API reference (a griffe extension).

The docstrings name other objects as Sphinx does, ``:class:`~jaxzero.core.loop.Trainer```
or ``:func:`make_search``` (relative to the module or class), and end a line with ``::``
before a literal block. mkdocstrings reads docstrings as Markdown, where neither means
anything, so this extension rewrites them when griffe loads the code: each role becomes
an optional cross-reference (a link where the site documents the object, the name in
code where it does not) and ``text::`` becomes ``text:``. ``convert`` serves docs/hooks.py
too, for the docstring text it puts in generated pages.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|obj|exc|const):`(~?)([^`<>]+)`")
LITERAL_BLOCK = re.compile(r"(?m)(\S)::$")
PACKAGES = ("jaxzero", "envs", "mctx", "jax", "flax", "optax", "experiments", "benchmarks")


def convert(text: str, scope: Any = None) -> str:
    """``text`` with each role as an optional autoref and ``text::`` as ``text:``.

    Args:
        text: a docstring.
        scope: the griffe object the docstring belongs to; relative names are looked up
            from it outwards (its members, its class's, its module's).

    Returns:
        Markdown for mkdocstrings.
    """

    def link(match: re.Match) -> str:
        short, name = match.groups()
        name = name.strip().lstrip(".")
        shown = name.rsplit(".", 1)[-1] if short else name
        identifier = _resolve(name, scope)
        return f'<autoref identifier="{html.escape(identifier)}" optional>`{shown}`</autoref>'

    return LITERAL_BLOCK.sub(r"\1:", ROLE.sub(link, text))


def _resolve(name: str, scope: Any) -> str:
    """The full path of ``name`` as seen from ``scope``, or ``name`` when it is absolute."""
    if name.split(".")[0] in PACKAGES or scope is None:
        return name
    first = name.split(".")[0]
    here = scope
    while here is not None:
        try:
            if first in here.members:
                return f"{here.path}.{name}"
        except (AttributeError, griffe.AliasResolutionError):
            pass
        here = here.parent
    module = getattr(scope, "module", None)
    return f"{module.path}.{name}" if module is not None else name


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring once the object tree is built (see the module docstring)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.is_alias or obj.docstring is None:
            return
        obj.docstring.value = convert(obj.docstring.value, obj)
