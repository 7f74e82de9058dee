"""Text from a folder (names, labels, a command line) as Markdown shows it: as text, never
as markup of its own; a metric's name as a safe file name."""

from __future__ import annotations

import re

_ESCAPED = re.compile(r"([\\`*\[\]|~!#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def markdown_text(text: object) -> str:
    """``text`` (a name, a label, a message from a file) as literal Markdown text: no
    HTML, link, image, emphasis, table cell or heading of its own, on one line."""
    text = " ".join(str(text).replace("\x00", "\ufffd").split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _ESCAPED.sub(r"\\\1", text)
    text = re.sub(r"^(\d+)([.)])", r"\1\\\2", text)  # not a list item
    return re.sub(r"^([-+=])", r"\\\1", text)


def code_span(text: object) -> str:
    """``text`` as one Markdown code span (a command line), whatever backticks it holds."""
    text = " ".join(str(text).replace("\x00", "\ufffd").split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""  # else it would join the fence
    return f"{fence}{pad}{text}{pad}{fence}"


def file_name(name: str) -> str:
    """A metric's name as a file name of a report: letters, digits, ``._-`` only."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "metric"
