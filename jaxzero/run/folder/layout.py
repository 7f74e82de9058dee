"""The names of what jaxzero keeps in a run, population, study or agent folder, each
defined here once; every reader and writer takes them from here.

    RUN/config.json  .jaxzero-run.json  .lock  metrics.jsonl  games.jsonl  elo.json
    RUN/checkpoints/N/  RUN/tb/  RUN/report/summary.md
    RUN/population.json  RUN/members/K/           a population (jaxzero.run.life.members)
    STUDY/study.json  STUDY/arms/NAME/  STUDY/report/   a study (jaxzero.run.studies.study)
    AGENT/config.json  agent.json  params.msgpack  MODEL_CARD.md  checksums.sha256

Writes below such a folder go through :mod:`jaxzero.run.folder.nolink` (no link followed), reads
through :mod:`jaxzero.run.folder.reads` (bounded, regular files inside), and what a run wrote is
listed in its manifest (:mod:`jaxzero.run.folder.manifest`).
"""

from __future__ import annotations

from pathlib import Path

# a run
CONFIG_FILE = "config.json"
MANIFEST_FILE = ".jaxzero-run.json"
LOCK_FILE = ".lock"  # held (flock) by the one process writing the run
METRICS_FILE = "metrics.jsonl"
GAMES_FILE = "games.jsonl"
ELO_FILE = "elo.json"
CHECKPOINT_DIR = "checkpoints"
TENSORBOARD_DIR = "tb"
REPORT_DIR = "report"
SUMMARY_FILE = "summary.md"  # in REPORT_DIR
# a population: a run whose members are runs too
POPULATION_FILE = "population.json"
MEMBERS_DIR = "members"
# a study: arms, each a population
STUDY_FILE = "study.json"
ARMS_DIR = "arms"
# an agent folder (jaxzero export); CHECKSUMS also beside each checkpoint step's files
AGENT_FILE = "agent.json"
PARAMS_FILE = "params.msgpack"
CARD_FILE = "MODEL_CARD.md"
CHECKSUMS = "checksums.sha256"


def member_folder(run_dir: Path, k: int) -> Path:
    """``RUN/members/K``: member ``k`` of the population in ``run_dir``."""
    return run_dir / MEMBERS_DIR / str(k)


def arm_folder(root: Path, name: str) -> Path:
    """``STUDY/arms/NAME``: arm ``name`` of the study in ``root``."""
    return root / ARMS_DIR / name
