"""mkdocs hooks: the parts of the site generated from the code at build time.

* ``reference/config.md``: every config key, with its type, default, range and what it
  does, read from the config sections themselves (``jaxzero.core.config``): the fields
  and their defaults from ``dataclasses.fields``, what each does from the comment beside
  or above it (else the section docstring's sentence that names it), the range from the
  section's own checks, which are asked about out-of-range values. Then each preset's
  values (``jaxzero.core.presets``) where they differ from the defaults, linked to the
  measurements in presets.md. Nothing is written twice, so the page cannot drift.
* ``reference/index.md``: the public names of ``jaxzero`` and ``envs`` (their
  ``__all__``) with the first line of each docstring and a link to its reference entry.
* The build warns (and ``--strict`` fails) when a public name has no docstring of its
  own or no ``::: name`` entry in a reference page (:func:`public_name_problems`, which
  ``tests/package/test_docs.py`` also runs).

A generated part replaces its marker line in the page, ``<!-- generated: NAME -->``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import io
import logging
import re
import textwrap
import tokenize
import typing
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.jaxzero")
DOCS = Path(__file__).resolve().parent
DIRECTIVE = re.compile(r"^::: (\S+)", re.MULTILINE)


def _roles():
    spec = importlib.util.spec_from_file_location("griffe_roles", DOCS / "griffe_roles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


convert = _roles().convert


# ---------------------------------------------------------------- the config reference


class Key(typing.NamedTuple):
    """One row of the config reference."""

    key: str  # dotted, "search.num_simulations"
    type: str
    default: str
    range: str
    what: str


def field_comments(cls: type) -> dict[str, str]:
    """Each field's comment in ``cls``'s source: the one beside it, after the comment
    lines right above it (those describe it too)."""
    lines = inspect.getsource(cls).splitlines()
    comments: dict[int, str] = {}
    source = io.StringIO("\n".join(lines) + "\n").readline
    for token in tokenize.generate_tokens(source):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
    found = {}
    for number, line in enumerate(lines, start=1):
        match = re.match(r"    (\w+): [^=]+=", line)
        if not match or match.group(1) not in {f.name for f in dataclasses.fields(cls)}:
            continue
        above, row = [], number - 1
        while row in comments and lines[row - 1].strip().startswith("#"):
            above.insert(0, comments[row])
            row -= 1
        text = " ".join([*above, comments.get(number, "")] if number in comments else above)
        found[match.group(1)] = text.strip()
    return found


def docstring_attributes(cls: type) -> dict[str, str]:
    """The entries of the ``Attributes:`` section of ``cls``'s docstring, by name."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    section = re.search(r"^Attributes:\n((?:    .*\n?|\n)+)", doc, re.MULTILINE)
    entries: dict[str, str] = {}
    for block in re.split(r"\n(?=    \w+: )", section.group(1) if section else ""):
        if match := re.match(r"\s*(\w+): (.*)", block, re.DOTALL):
            entries[match.group(1)] = " ".join(match.group(2).split())
    return entries


def docstring_sentence(cls: type, name: str) -> str:
    """The first sentence of ``cls``'s docstring that names ``name`` as ````name````."""
    text = " ".join(inspect.cleandoc(cls.__doc__ or "").split())
    for sentence in re.split(r"(?<=[.;])\s+(?=[A-Z(`])", text):
        if f"``{name}``" in sentence:
            return sentence
    return ""


def _type_name(kind: Any) -> str:
    from jaxzero.core.config import Arguments

    if typing.get_origin(kind) is typing.Literal:
        return "str"
    if kind == Arguments:
        return "JSON object"
    return getattr(kind, "__name__", str(kind))


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple):
        return "{" + ", ".join(f'"{k}": {_shown(v)}' for k, v in value) + "}"
    return repr(value)


def _refusal(cls: type, name: str, value: Any) -> str | None:
    """The section's message refusing ``name=value``, or None when it accepts it."""
    try:
        cls(**{name: value})
    except (ValueError, TypeError) as error:
        return str(error)
    return None


def probe_range(cls: type, key: str, kind: Any, default: Any) -> tuple[str, list[str]]:
    """The range of the field ``key`` as the section's own checks state it, asked with
    values far below and far above its default; and, asked with the integer next to the
    default, any other rule they hold it to (one that involves another key).

    Returns:
        The range ("" when nothing is refused) and the rules' messages.
    """
    name = key.rsplit(".", 1)[-1]
    if typing.get_origin(kind) is typing.Literal:
        return "one of " + ", ".join(f"`{c}`" for c in typing.get_args(kind)), []
    if kind is str:
        return ("not empty" if _refusal(cls, name, "") else ""), []
    if kind not in (int, float):
        return "", []
    ranges: list[str] = []
    rules: list[str] = []
    for value in [-(10**9), 10**9] + ([default + 1] if kind is int else []):
        message = _refusal(cls, name, kind(value))
        if message is None or not message.startswith(key):
            continue  # accepted, or refused for another key's sake
        if match := re.search(r"must be (.*?)(?:, got\b|$)", message):
            text = re.sub(r"([a-z_]+\.[a-z_]+)=[\d.,]+", r"\1", match.group(1))
        elif match := re.search(r"is beyond ([\d,]*\d)", message):
            text = f"<= {match.group(1)}"
        else:
            rules.append(f"`{key}={value}` is refused: {message}")
            continue
        if text not in ranges:
            ranges.append(text)
    return ", ".join(ranges), rules


def section_keys(cls: type, prefix: str) -> tuple[list[Key], list[str]]:
    """The rows of one section (plain fields only) and its cross-key rules."""
    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    attributes = docstring_attributes(cls)
    keys, rules = [], []
    for field in dataclasses.fields(cls):
        kind = hints[field.name]
        if dataclasses.is_dataclass(kind):
            continue
        default = field.default
        value_range, field_rules = probe_range(cls, prefix + field.name, kind, default)
        rules += field_rules
        what = (
            comments.get(field.name)
            or attributes.get(field.name)
            or docstring_sentence(cls, field.name)
        )
        keys.append(Key(prefix + field.name, _type_name(kind), _shown(default), value_range, what))
    return keys, rules


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def config_sections_markdown() -> str:
    """Every section of ``Config``: its docstring, then a table of its keys."""
    from jaxzero.core import config as config_lib

    hints = typing.get_type_hints(config_lib.Config)
    sections = [("", config_lib.Config)] + [
        (f"{name}.", kind) for name, kind in hints.items() if dataclasses.is_dataclass(kind)
    ]
    parts = []
    for prefix, cls in sections:
        title = f"`{prefix[:-1]}`: `{cls.__name__}`" if prefix else "Top level: `Config`"
        keys, rules = section_keys(cls, prefix)
        doc = inspect.cleandoc(cls.__doc__ or "")
        if not prefix:
            doc = doc.split("\n\n")[0]  # the rest (attributes, errors) is in the API entry
        parts.append(f"### {title}\n\n{convert(doc)}\n")
        rows = ["| key | type | default | range | what it does |", "|---|---|---|---|---|"]
        for key in keys:
            values = (f"`{key.key}`", key.type, f"`{key.default}`", key.range, key.what)
            rows.append("| " + " | ".join(_cell(v) for v in values) + " |")
        parts.append("\n".join(rows) + "\n")
        if rules:
            listed = "\n".join(f"- {_cell(rule)}" for rule in dict.fromkeys(rules))
            parts.append(f"Rules that involve other keys, in the checks' own words:\n\n{listed}\n")
    return "\n".join(parts)


def _slug(text: str) -> str:
    from markdown.extensions.toc import slugify

    return slugify(text, "-")


def preset_anchors(presets_page: str) -> dict[str, str]:
    """Each preset name's section in presets.md (a heading that names it, ``*`` matching
    a family such as ``pgx/minatar-*``)."""
    from jaxzero.core.presets import PRESETS

    headings = re.findall(r"^## (.+)$", presets_page, re.MULTILINE)
    anchors = {}
    for name in PRESETS:
        for heading in headings:
            words = re.split(r"[\s,:]+", heading)
            family = [w[:-1] for w in words if w.endswith("*")]
            if name in words or any(name.startswith(f) for f in family):
                anchors[name] = _slug(heading)
                break
    return anchors


def presets_markdown() -> str:
    """Each preset's values where they differ from the defaults, with its lab notes."""
    from jaxzero.core import config as config_lib
    from jaxzero.core.presets import PRESETS

    defaults = _flat(config_lib.config_to_dict(config_lib.Config()))
    anchors = preset_anchors((DOCS / "presets.md").read_text())
    parts = []
    for name, preset in PRESETS.items():
        values = _flat(config_lib.config_to_dict(preset))
        changed = {k: v for k, v in values.items() if v != defaults[k] and k != "game"}
        notes = (
            f"[the measurements that chose them](../presets.md#{anchors[name]})"
            if name in anchors
            else "no measurement recorded in presets.md"
        )
        rows = "\n".join(f"    | `{k}` | `{_shown(_frozen(v))}` |" for k, v in changed.items())
        summary = f"`jaxzero train {name}`; {len(changed)} keys differ from the defaults"
        parts.append(
            f'??? note "`{name}`"\n\n    {summary}; {notes}.\n\n'
            f"    | key | value |\n    |---|---|\n{rows}\n"
        )
    return "\n".join(parts)


def _flat(data: dict, prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, value in data.items():
        if isinstance(value, dict) and name != "args":
            flat |= _flat(value, f"{prefix}{name}.")
        else:
            flat[prefix + name] = value
    return flat


def _frozen(value: Any) -> Any:
    return tuple(sorted(value.items())) if isinstance(value, dict) else value


# ---------------------------------------------------------------- public names


def public_names() -> dict[str, Any]:
    """``"jaxzero.make_trainer"`` -> the object, for every name in ``__all__`` of jaxzero
    and envs (``__version__`` aside)."""
    import envs
    import jaxzero

    names = {}
    for module in (jaxzero, envs):
        for name in module.__all__:
            if name != "__version__":
                names[f"{module.__name__}.{name}"] = getattr(module, name)
    return names


def own_docstring(obj: Any) -> str:
    """``obj``'s own docstring ("" when it has none, or only the one Python makes up for a
    dataclass or NamedTuple, ``Name(field, ...)``)."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    doc = inspect.cleandoc(doc or "")
    if re.fullmatch(rf"{re.escape(getattr(obj, '__name__', ''))}\(.*\)", doc, re.DOTALL):
        return ""
    return doc


def reference_entries(docs_dir: Path = DOCS) -> dict[str, str]:
    """Every ``::: name`` entry of the reference pages: name -> page (relative)."""
    entries = {}
    for page in sorted((docs_dir / "reference").glob("*.md")):
        for name in DIRECTIVE.findall(page.read_text()):
            entries.setdefault(name, page.name)
    return entries


def public_name_problems(docs_dir: Path = DOCS) -> list[str]:
    """What keeps a public name out of the API reference: no docstring, or no entry."""
    entries = reference_entries(docs_dir)
    problems = []
    for name, obj in public_names().items():
        if not own_docstring(obj):
            problems.append(f"{name} has no docstring of its own")
        if name not in entries:
            problems.append(f"{name} has no '::: {name}' entry in docs/reference/")
    return problems


def public_names_markdown() -> str:
    """A table per package: each public name, what it is, and its reference entry."""
    entries = reference_entries()
    parts = []
    for package in ("jaxzero", "envs"):
        rows = ["| name | what it is |", "|---|---|"]
        for name, obj in public_names().items():
            if not name.startswith(package + "."):
                continue
            summary = own_docstring(obj).split("\n\n")[0].replace("\n", " ")
            link = f"[`{name.split('.', 1)[1]}`]({entries.get(name, 'index.md')}#{name})"
            rows.append(f"| {link} | {_cell(convert(summary))} |")
        parts.append(f"### `{package}`\n\n" + "\n".join(rows) + "\n")
    return "\n".join(parts)


def cli_markdown() -> str:
    """Every ``jaxzero`` command's ``--help``, as the command line prints it."""
    import typer.main
    from typer.testing import CliRunner

    from jaxzero.cli import app

    group = typer.main.get_command(app)
    runner = CliRunner()
    parts = []
    for name in [None, *sorted(group.commands)]:  # type: ignore[attr-defined]
        args = ["--help"] if name is None else [name, "--help"]
        text = runner.invoke(app, args, env={"COLUMNS": "96", "TERM": "dumb"}).output
        title = "jaxzero" if name is None else f"jaxzero {name}"
        parts.append(f"## `{title}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(parts)


# ---------------------------------------------------------------- mkdocs events

GENERATED = {
    "config-sections": config_sections_markdown,
    "presets": presets_markdown,
    "public-names": public_names_markdown,
    "cli": cli_markdown,
}


def on_pre_build(config: Any) -> None:
    for problem in public_name_problems(Path(config["docs_dir"])):
        log.warning(problem)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def generated(match: re.Match) -> str:
        name = match.group(1)
        if name not in GENERATED:
            log.warning(f"{page.file.src_path}: no generated part {name!r}")
            return match.group(0)
        return textwrap.dedent(GENERATED[name]())

    return re.sub(r"^<!-- generated: ([\w-]+) -->$", generated, markdown, flags=re.MULTILINE)
