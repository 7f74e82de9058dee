"""The docs site's generated parts: every public name documented and in the API reference,
every config key in the configuration reference with what it does, every preset linked to
its measurements. The same checks make `mkdocs build --strict` fail (docs/hooks.py)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from jaxzero.core import config as config_lib
from jaxzero.core.presets import PRESETS

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["docs_hooks"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("docs_hooks", None)


def test_every_public_name_has_a_docstring_and_a_reference_entry(hooks):
    names = hooks.public_names()
    assert "jaxzero.make_trainer" in names and "envs.check_env" in names
    assert hooks.public_name_problems() == []


def test_a_missing_docstring_or_entry_is_named(hooks, tmp_path):
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "api.md").write_text("::: jaxzero.make_trainer\n")
    problems = hooks.public_name_problems(tmp_path)
    assert "envs.make has no '::: envs.make' entry in docs/reference/" in problems
    assert not any("jaxzero.make_trainer" in problem for problem in problems)

    class Undocumented:
        pass

    assert hooks.own_docstring(Undocumented) == ""


def test_the_config_reference_has_every_key_with_what_it_does(hooks):
    rows = {}
    for line in hooks.config_sections_markdown().splitlines():
        if match := re.match(r"\| `([\w.]+)` \| ([^|]+) \| `(.*?)` \| (.*?) \| (.*) \|$", line):
            rows[match.group(1)] = match.groups()[1:]
    assert set(rows) == set(config_lib.valid_keys())
    assert [key for key, row in rows.items() if not row[3].strip()] == []


def test_the_config_reference_ranges_are_the_checks_own(hooks):
    rows = {}
    for line in hooks.config_sections_markdown().splitlines():
        if match := re.match(r"\| `([\w.]+)` \| [^|]+ \| `.*?` \| (.*?) \|", line):
            rows[match.group(1)] = match.group(2)
    assert rows["search.num_simulations"] == ">= 1, <= 16,384"
    assert rows["gate.threshold"] == "in (0.5, 1]"
    assert rows["evaluation.games"] == "0 or an even number >= 2"
    assert rows["optim.schedule"] == "one of `constant`, `cosine`"
    assert rows["replay.min_size"].startswith("between 0 and replay.capacity")


def test_every_preset_links_its_measurements(hooks):
    anchors = hooks.preset_anchors((DOCS / "presets.md").read_text())
    assert set(anchors) == set(PRESETS)
    assert "no measurement recorded" not in hooks.presets_markdown()
