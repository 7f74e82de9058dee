"""Fault injection: what a run survives, each probe reported survived / failed / skipped.

    .venv/bin/python tools/faults.py --kills 10 --save-kills 4 --seed 0

prints the table that docs/faults.md quotes, with the command, date and machine.

Every probe drives the real command line (``python -m jaxzero``) on tiny tic-tac-toe
runs in a scratch folder, and checks what a user would check afterwards:

* ``kill -9`` at random moments, then ``--resume``, until the run is done: the final
  TrainState equals an uninterrupted run's leaf for leaf, and metrics.jsonl its rows;
* ``kill -9`` while a checkpoint is being written (seen as orbax's temporary folder);
* a second writer on a run directory: refused in one line naming the first's PID;
* a damaged byte in each file of a checkpoint: every load refuses it, naming the
  intact checkpoint to fall back to; a truncated config.json: one line naming the file;
* a read-only disk, a disk full at the start and one that fills during a save (a small
  tmpfs; these need root and ``mount``, and are skipped with the reason otherwise):
  one ``error:`` line, exit code 2, nothing the user had changed;
* ``--force`` on someone else's folder (a config.json of theirs, src/, .git/; or ``{}``
  beside model.pt): refused, nothing changed; on a run holding the user's files (its
  ``report`` a link elsewhere), with a manifest and from before it: those files kept;
* SIGINT or SIGTERM at random moments 0-10 s into ``train``: one line and 130/143, no
  run folder left without a checkpoint;
* sizes beyond memory (``replay.capacity=1e10``, ``selfplay.batch_size=1e9``): one line
  naming the setting, before anything is written;
* a diverging run: one line naming the iteration, strict-JSON metrics, no NaN checkpoint;
* a population member diverging: it alone stops, named and recorded; the others train
  and resume; its export refused; every member diverging: one line;
* ``eval`` while the run trains and prunes its checkpoints: every eval finishes;
* tampered agent folders (a flipped byte, NaN parameters, a malformed agent.json) and
  swapped checkpoint folders or an edited config.json on resume: one line each;
* a second or third SIGINT/SIGTERM in the first compile: one line, 130/143 (never 139);
  evaluation/search sizes and network depth beyond bounds, settings without meaning
  (Dirichlet alpha 0, inf rates, seeds past 2**32, --grid typos), game modules failing
  on import, a file as --compile-cache, export before the first checkpoint, a deleted
  population.json: one line each, no folder made;
* a link out of a run (to the user's thesis.txt or photos/) at each name a run and its
  report write (``.lock``, config.json, the manifest, metrics.jsonl, games.jsonl,
  checkpoints/ and a step, tb/, report/ and summary.md), a population's ``members/0`` and a
  study's ``arms/NAME`` linked to the user's own run, a dangling metrics.jsonl or
  games.jsonl: ``--resume``, ``--force`` and ``report`` refuse each in one line naming it,
  the target as it was, nothing made outside;
* a ``--jobs 2`` study started from a folder holding a ``typer.py`` and a ``jaxzero.py``:
  neither runs; bad games.jsonl lines: ``report`` succeeds; a GTP line of 64 MB: answered
  with an error in bounded memory; a corrupt or FIFO population_ways.json: ``--seeds``
  measures again and trains.

    .venv/bin/python tools/faults.py --only links_below_a_run --only dangling_links

runs only the probes named (the reference run is made first all the same).

"One line" means: exit code 2, no Python traceback, the last line starts with ``error:``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import jax
import numpy as np
from toy import TOY_RUN

VOLATILE = ("elapsed", "positions_per_second")  # wall-clock columns of a metrics row
SCRATCH: list[Path] = []  # folders whose paths are cut from the table
ITERATIONS = 40  # of each tiny run: long enough that random kills land mid-training


@dataclasses.dataclass
class Outcome:
    probe: str
    result: str  # survived / failed / skipped
    detail: str


def jaxzero(*args: str, **popen) -> subprocess.Popen:
    command = [sys.executable, "-m", "jaxzero", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen)


def finish(*args: str, stdin: str = "") -> tuple[int, str]:
    process = jaxzero(*args, stdin=subprocess.PIPE, text=True)
    output, _ = process.communicate(stdin, timeout=600)
    return process.returncode, output


def one_line_error(code: int, output: str) -> str:
    """'' when ``output`` is one clean ``error:`` line with exit code 2, else what is wrong."""
    lines = [line for line in output.splitlines() if line.strip()]
    if code != 2:
        return f"exit code {code}"
    if "Traceback" in output:
        return f"a traceback ({len(lines)} lines)"
    if not lines or not lines[-1].startswith("error: "):
        return "no error: line"
    return ""


def train_args(run: Path, iterations: int, every: int, *, resume: bool) -> list[str]:
    if resume:
        return ["train", "--resume", "--out", str(run), "--iterations", str(iterations)]
    config = [*TOY_RUN, f"train.checkpoint_every={every}"]
    return ["train", "tic_tac_toe", *config, "--out", str(run), "--iterations", str(iterations)]


def restore_state(run: Path):
    from jaxzero.core.loop import make_trainer
    from jaxzero.run.life.checkpoint import Checkpointer
    from jaxzero.run.life.driver import load_run_config

    abstract = jax.eval_shape(make_trainer(load_run_config(run)).init, jax.random.key(0))
    with Checkpointer(run, read_only=True) as checkpointer:
        return checkpointer.restore(abstract)[0]


def rows(run: Path) -> list[dict]:
    import json

    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(x).items() if k not in VOLATILE} for x in lines]


def same_run(run: Path, reference: Path) -> str:
    """'' when ``run`` ended where ``reference`` did, else the first difference."""
    a, b = restore_state(run), restore_state(reference)
    pairs = zip(jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b), strict=True)
    for (path, x), y in pairs:
        if not np.array_equal(_raw(x), _raw(y)):
            return f"state differs at {jax.tree_util.keystr(path)}"
    if rows(run) != rows(reference):
        return f"metrics.jsonl differs ({len(rows(run))} rows, {len(rows(reference))} expected)"
    return ""


def _raw(x) -> np.ndarray:
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(x))
    return np.asarray(x)


def holds_run(run: Path) -> bool:
    return (run / "config.json").exists()


def kill_and_resume(run: Path, every: int, moments: list[Callable[..., None]]) -> int:
    """Train ``run`` to ITERATIONS, killing it (-9) once per moment: each start (or resume)
    waits for ``moment(run, process)`` and is killed if still running; then one last
    resume finishes the run. Returns the kills made (a start may finish the run first)."""
    made = 0
    for moment in moments:
        process = jaxzero(*train_args(run, ITERATIONS, every, resume=holds_run(run)))
        moment(run, process)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            made += 1
        process.wait()
    code, output = finish(*train_args(run, ITERATIONS, every, resume=holds_run(run)))
    if code != 0:
        raise RuntimeError(f"the last resume failed:\n{output[-2000:]}")
    return made


def after(seconds: float) -> Callable[..., None]:
    def wait(run: Path, process: subprocess.Popen) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=seconds)

    return wait


def random_kills(
    scratch: Path, reference: Path, kills: int, rng: random.Random, span: float
) -> Outcome:
    """Kills at moments drawn within ``span``, the seconds a whole uninterrupted run took
    (start-up included), so that they land while the run trains, however fast it is."""
    run = scratch / "killed"
    moments = [after(rng.uniform(0.2, 0.9) * span) for _ in range(kills)]
    made = kill_and_resume(run, 2, moments)
    problem = same_run(run, reference)
    if not problem and kills and not made:  # a probe that probed nothing
        problem = "no kill landed: every start finished the run first"
    detail = problem or f"final state and all {len(rows(run))} rows as uninterrupted"
    result = "failed" if problem else "survived"
    return Outcome(f"{made} kill -9 at random moments, each resumed", result, detail)


def during_save(run: Path, process: subprocess.Popen) -> None:
    """Return as soon as a checkpoint is being written (or the process has ended)."""
    while process.poll() is None:
        if any((run / "checkpoints").glob("*.orbax-checkpoint-tmp*")):
            return
        time.sleep(0.001)


def kill_during_save(scratch: Path, reference: Path, kills: int) -> Outcome:
    run = scratch / "killed_saving"
    made = kill_and_resume(run, 1, [during_save] * kills)
    problem = same_run(run, reference)
    detail = problem or "final state and all rows as uninterrupted"
    result = "failed" if problem else "survived"
    return Outcome(f"{made} kill -9 during a checkpoint save, each resumed", result, detail)


def two_writers(scratch: Path) -> Outcome:
    run = scratch / "two_writers"
    first = jaxzero(*train_args(run, 40, 2, resume=False))
    while not (run / "metrics.jsonl").exists() and first.poll() is None:
        time.sleep(0.2)
    code, output = finish(*train_args(run, 40, 2, resume=True))
    first.send_signal(signal.SIGTERM)  # stops after the iteration, saving
    first.wait(timeout=300)
    problem = one_line_error(code, output) or (
        "" if f"(pid {first.pid})" in output else "the holder's pid not named"
    )
    iterations = [r["iteration"] for r in rows(run)]
    if iterations != list(range(1, len(iterations) + 1)):
        problem = problem or "metrics.jsonl rows interleaved"
    return Outcome(
        "a second writer on the run directory",
        "failed" if problem else "survived",
        problem or _last(output),
    )


def tree_digest(folder: Path) -> str:
    """One hash of every file's path and bytes under ``folder``: did anything change?"""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != ".lock"):
        digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


def damaged_checkpoints(scratch: Path, reference: Path) -> list[Outcome]:
    """A flipped byte in each file of the latest checkpoint, one file at a time: every
    load must refuse it (in this process: the agent loader and the resume's restore);
    then the command line once, for the one-line error naming the fallback."""
    from jaxzero.run.agents.agent import load_agent
    from jaxzero.run.life.checkpoint import CheckpointError

    run = scratch / "damaged"
    shutil.copytree(reference, run)
    step = max(int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit())
    folder = run / "checkpoints" / str(step)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    accepted = []
    for path in files:
        original = path.read_bytes()
        path.write_bytes(_flipped(original))
        for load in (lambda: load_agent(run), lambda: restore_state(run)):
            try:
                load()
                accepted.append(str(path.relative_to(folder)))
            except CheckpointError:
                pass
        path.write_bytes(original)
    path = max(files, key=lambda p: p.stat().st_size)
    path.write_bytes(_flipped(path.read_bytes()))
    code, output = finish("analyze", "tic_tac_toe", "--checkpoint", str(run))
    problem = one_line_error(code, output) or (
        "" if "is intact" in output else "no intact checkpoint named"
    )
    return [
        Outcome(
            f"a damaged byte in each of the {len(files)} files of a checkpoint",
            "failed" if accepted else "survived",
            f"loaded anyway: {', '.join(accepted)}" if accepted else "every load refused it",
        ),
        Outcome(
            "`jaxzero analyze` on a damaged checkpoint",
            "failed" if problem else "survived",
            problem or _last(output),
        ),
    ]


def _flipped(data: bytes) -> bytes:
    if not data:
        return b"\x00"
    raw = bytearray(data)
    raw[len(raw) // 2] ^= 0xFF
    return bytes(raw)


def truncated_config(scratch: Path, reference: Path) -> Outcome:
    run = scratch / "truncated_config"
    shutil.copytree(reference, run)
    text = (run / "config.json").read_text()
    (run / "config.json").write_text(text[: len(text) // 2])
    code, output = finish(*train_args(run, ITERATIONS + 2, 2, resume=True))
    problem = one_line_error(code, output) or (
        "" if "config.json" in output.splitlines()[-1] else "the file not named"
    )
    result = "failed" if problem else "survived"
    return Outcome("a truncated config.json, --resume", result, problem or _last(output))


def _last(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path | None]:
    """A small tmpfs mounted on a new folder (None where the machine does not allow it)."""
    folder = Path(tempfile.mkdtemp(prefix="jaxzero-faults-"))
    SCRATCH.append(folder)
    mounted = (
        os.geteuid() == 0
        and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                           capture_output=True).returncode == 0
    )  # fmt: skip
    try:
        yield folder if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


NO_TMPFS = "needs root and mount to make a small tmpfs; not available here"


def read_only_disk(reference: Path) -> list[Outcome]:
    commands = {
        "train --resume": lambda run: train_args(run, ITERATIONS + 2, 2, resume=True),
        "report": lambda run: ["report", str(run)],
        "eval": lambda run: ["eval", str(run), "--games", "2", "--opponents", "random"],
    }
    with tmpfs("16m") as disk:
        if disk is None:
            return [Outcome(f"read-only disk: {name}", "skipped", NO_TMPFS) for name in commands]
        run = disk / "run"
        shutil.copytree(reference, run)
        before = tree_digest(run)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        outcomes = []
        for name, args in commands.items():
            code, output = finish(*args(run))
            problem = one_line_error(code, output)
            if tree_digest(run) != before:
                problem = problem or "files changed"
            result = "failed" if problem else "survived"
            outcomes.append(Outcome(f"read-only disk: {name}", result, problem or _last(output)))
        code, output = finish("play", "--checkpoint", str(run), stdin="5\n1\n2\n3\n4\n6\n7\n8\n9\n")
        result = "survived" if code in (0, 2) and "Traceback" not in output else "failed"
        outcomes.append(Outcome("read-only disk: play", result, _last(output)))
        return outcomes


def full_disk_at_start() -> Outcome:
    with tmpfs("1m") as disk:
        if disk is None:
            return Outcome("disk full at the start", "skipped", NO_TMPFS)
        with contextlib.suppress(OSError), open(disk / "filler", "wb") as filler:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        run = disk / "run"
        code, output = finish(*train_args(run, 4, 2, resume=False))
        problem = one_line_error(code, output)
        if run.exists():
            problem = problem or f"a half-made run directory left: {sorted(os.listdir(run))}"
        result = "failed" if problem else "survived"
        return Outcome("disk full at the start (new run)", result, problem or _last(output))


def full_disk_mid_save() -> Outcome:
    """A disk that fills during a save: one line, the previous checkpoint intact (it
    loads), and after space is freed the run resumes from it."""
    from jaxzero.run.agents.agent import load_agent

    with tmpfs("900k") as disk:
        if disk is None:
            return Outcome("disk fills during a save", "skipped", NO_TMPFS)
        run = disk / "run"
        code, output = finish(*train_args(run, 400, 1, resume=False))
        problem = one_line_error(code, output)
        if "No space left on device" not in output:
            problem = problem or "the full disk not named"
        try:
            intact = load_agent(run).iteration
        except Exception as error:  # noqa: BLE001 (any failure to load is the finding)
            problem, intact = problem or f"no intact checkpoint loads ({error})", None
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        code, resumed = finish(*train_args(run, (intact or 0) + 2, 1, resume=True))
        if code != 0:
            problem = problem or f"resume after freeing space failed: {_last(resumed)}"
        detail = problem or f"{_last(output)} (resumed from {intact} once space was freed)"
        return Outcome("disk fills during a save", "failed" if problem else "survived", detail)


def force_on_a_foreign_folder(scratch: Path) -> Outcome:
    """`--force --out DIR` where DIR is someone else's project with a config.json."""
    folder = scratch / "project"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.py").write_text("print('hello')\n")
    (folder / ".git").mkdir()
    (folder / "notes.md").write_text("notes\n")
    (folder / "config.json").write_text('{"port": 8080}\n')
    before = tree_digest(folder)
    code, output = finish(*train_args(folder, 2, 1, resume=False), "--force")
    problem = one_line_error(code, output)
    if tree_digest(folder) != before or sorted(os.listdir(folder)) != sorted(
        [".git", "config.json", "notes.md", "src"]
    ):
        problem = problem or "the folder changed"
    result = "failed" if problem else "survived"
    return Outcome("--force on a folder that is not a run", result, problem or _last(output))


def force_deletes_only_ours(scratch: Path, reference: Path) -> list[Outcome]:
    """Issue 45, items 2 and 3: `--force` on a config.json of another tool's whose keys are
    all jaxzero's; on a run holding the user's files inside its own folders, with a manifest
    and from a jaxzero before it (resumed). Its `report` first a link to a folder elsewhere:
    refused in one line, nothing changed (issue 56: no link where jaxzero writes); then, the
    link removed as the line says, `--force` keeps the user's files and trains."""
    users = {"members/NOTES.txt": "n", "members/1/my_analysis.py": "a",
             "checkpoints/README.txt": "r", "report/my_figure_notes.md": "f"}  # fmt: skip
    outcomes = []
    for k, config in enumerate(('{"seed": 42}', "{}")):
        folder = scratch / f"foreign{k}"
        for name in ("checkpoints/epoch_10/model.pt", "report/paper.md"):
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("theirs")
        (folder / "config.json").write_text(config)
        before = tree_digest(folder)
        code, output = finish(*train_args(folder, 2, 1, resume=False), "--force")
        problem = one_line_error(code, output)
        problem = problem or (tree_digest(folder) != before and "the folder changed")
        result = "failed" if problem else "survived"
        probe = f"--force on config.json {config}, model.pt, paper.md"
        outcomes.append(Outcome(probe, result, problem or _last(output)))
    for older in (False, True):
        run, outside = scratch / f"users{int(older)}", scratch / f"outside{int(older)}"
        shutil.copytree(reference, run)
        if older:  # as a jaxzero before the manifest left it: it still resumes
            (run / ".jaxzero-run.json").unlink()
            code, output = finish(*train_args(run, ITERATIONS + 2, 1, resume=True))
            if code != 0:
                failed = Outcome("a run before the manifest resumes", "failed", _last(output))
                outcomes.append(failed)
                continue
        outside.mkdir()
        (outside / "summary.md").write_text("theirs")  # a name the report writes
        (run / "report").symlink_to(outside, target_is_directory=True)
        for name, text in users.items():
            (run / name).parent.mkdir(parents=True, exist_ok=True)
            (run / name).write_text(text)
        as_planted = (snapshot(run), snapshot(outside))
        code, output = finish(*train_args(run, 2, 1, resume=False), "--force")
        refused = f"{run / 'report'} is a symbolic link" in _last(output)
        problem = one_line_error(code, output) or ("" if refused else "report not named")
        if not problem and (snapshot(run), snapshot(outside)) != as_planted:
            problem = "files changed"
        (run / "report").unlink()  # as the line says; the user's notes back in a folder
        (run / "report").mkdir()
        (run / "report" / "my_figure_notes.md").write_text(users["report/my_figure_notes.md"])
        code, trained = finish(*train_args(run, 2, 1, resume=False), "--force")
        kept = [n for n, t in users.items() if (run / n).is_file() and (run / n).read_text() == t]
        if not problem and (code != 0 or "Traceback" in trained):
            problem = f"without the link: exit {code}: {_last(trained)}"
        if not problem and len(kept) < len(users):
            problem = f"kept {len(kept)} of {len(users)}"
        if not problem and (outside / "summary.md").read_text() != "theirs":
            problem = "the link's target changed"
        if not problem and not (run / "checkpoints" / "2").is_dir():
            problem = "no new run"
        what = "a run before the manifest (resumed)" if older else "a run"
        probe = f"--force on {what} holding the user's files, report a link"
        detail = (f"refused, nothing changed ({_last(output)}); the link removed: kept "
                  f"{', '.join(kept)} and trained")  # fmt: skip
        outcomes.append(Outcome(probe, "failed" if problem else "survived", problem or detail))
    return outcomes


def interrupts_in_start_up(scratch: Path, tries: int, rng: random.Random) -> Outcome:
    """SIGINT or SIGTERM at a random moment 0-10 s into `jaxzero train`: it ends with one
    line and 130/143 (or, in the loop, saves and exits 130/143); no folder without a
    checkpoint is left, and the same command then starts (never "already holds a run")."""
    problems, seen = [], []
    for k in range(tries):
        run, sig = scratch / f"interrupt{k}", rng.choice([signal.SIGINT, signal.SIGTERM])
        moment = rng.uniform(0.0, 10.0)
        process = jaxzero(*train_args(run, 200, 1, resume=False), text=True)
        time.sleep(moment)
        process.send_signal(sig)
        output, _ = process.communicate(timeout=300)
        lines = [line for line in output.splitlines() if line.strip()]
        saved = (run / "checkpoints").is_dir() and any(
            p.name.isdigit() for p in (run / "checkpoints").iterdir()
        )
        seen.append(f"{sig.name}@{moment:.1f}s:{'saved' if saved else 'clean'}")
        if process.returncode != 128 + sig or "Traceback" in output or not lines:
            problems.append(f"{sig.name} at {moment:.1f} s: exit {process.returncode}")
        elif run.exists() and not saved:
            problems.append(f"{sig.name} at {moment:.1f} s left a folder without checkpoint")
        elif not saved and not lines[-1].startswith("error: interrupted by"):
            problems.append(f"{sig.name} at {moment:.1f} s: no one-line notice")
    detail = "; ".join(problems) or ", ".join(seen)
    result = "failed" if problems else "survived"
    return Outcome(f"{tries} interrupts at random moments 0-10 s into train", result, detail)


def sizes_beyond_memory(scratch: Path) -> list[Outcome]:
    outcomes = []
    for setting in ("replay.capacity=10000000000", "selfplay.batch_size=1000000000"):
        run = scratch / "huge"
        code, output = finish(*train_args(run, 2, 1, resume=False), setting)
        problem = one_line_error(code, output) or ("a folder was made" if run.exists() else "")
        result = "failed" if problem else "survived"
        outcomes.append(Outcome(f"train {setting}", result, problem or _last(output)))
    return outcomes


def divergence(scratch: Path) -> Outcome:
    """A learning rate that diverges: one line naming the iteration, strict-JSON metrics,
    and no checkpoint that holds a non-finite parameter (each loads, and is finite)."""
    import json

    from jaxzero.run.agents.agent import load_agent

    run = scratch / "diverged"
    args = train_args(run, 12, 1, resume=False)
    code, output = finish(*args, "optim.learning_rate=1e30", "optim.max_grad_norm=0")
    problem = one_line_error(code, output)
    try:
        for line in (run / "metrics.jsonl").read_text().splitlines():
            json.loads(line, parse_constant=lambda name: 1 / 0)  # NaN, Infinity: refused
    except (ZeroDivisionError, ValueError, OSError):
        problem = problem or "metrics.jsonl is not strict JSON"
    for folder in sorted((run / "checkpoints").glob("[0-9]*")):
        params = load_agent(run, step=int(folder.name)).params  # refuses non-finite ones
        if not all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(params)):
            problem = problem or f"checkpoint {folder.name} holds non-finite parameters"
    result = "failed" if problem else "survived"
    return Outcome("a diverging run (learning rate 1e30)", result, problem or _last(output))


def diverging_member(scratch: Path) -> Outcome:
    """A population whose member 1 diverges (learning rate 1e30): the run
    finishes its budget and resumes, member 1 named in one line and recorded in strict
    JSON, its export refused in one line; with every member diverging, one line."""
    import json

    run = scratch / "diverging-member"
    grid = ["--grid", "optim.learning_rate=1e-3,1e30"]
    code, output = finish(*train_args(run, 8, 2, resume=False), *grid)
    problem = f"exit code {code}" if code else ""
    if not problem and "member 1 of" not in output:
        problem = "no line names member 1"
    try:
        text = (run / "population.json").read_text()
        record = json.loads(text, parse_constant=lambda name: 1 / 0)["diverged"]
        problem = problem or ("" if [r["member"] for r in record] == [1] else f"{record}")
    except (ZeroDivisionError, ValueError, OSError, KeyError, TypeError):
        problem = problem or "population.json records no diverged member in strict JSON"
    code, resumed = finish(*train_args(run, 10, 2, resume=True))
    problem = problem or (f"--resume: exit code {code}" if code else "")
    code, exported = finish("export", str(run / "members" / "1"), "--out", str(scratch / "m1"))
    problem = problem or one_line_error(code, exported)
    everyone = scratch / "diverging-members"
    grid = ["--grid", "optim.learning_rate=1e30,1e31"]
    code, stopped = finish(*train_args(everyone, 8, 2, resume=False), *grid)
    problem = problem or one_line_error(code, stopped)
    lines = [line for line in output.splitlines() if line.startswith("member 1 of")]
    named = lines[-1] if lines else ""
    detail = problem or f"{named}; export: {_last(exported)}; all: {_last(stopped)}"
    result = "failed" if problem else "survived"
    return Outcome("a population member diverging (learning rate 1e30)", result, detail)


def eval_during_training(scratch: Path, evals: int = 3) -> Outcome:
    """`jaxzero eval` of a run still training, checkpointing every iteration and keeping
    the newest 3: each eval finishes (a step removed meanwhile skipped and named)."""
    run = scratch / "live"
    trainer = jaxzero(*train_args(run, 400, 1, resume=False), "train.keep_every=0")
    while trainer.poll() is None and not any((run / "checkpoints").glob("[0-9]*")):
        time.sleep(0.2)
    problems = []
    for _ in range(evals):
        code, output = finish("eval", str(run), "--opponents", "random", "--games", "2")
        if code != 0 or "Traceback" in output or "start a new run" in output:
            problems.append(f"exit {code}: {_last(output)}")
    trainer.send_signal(signal.SIGTERM)
    trainer.wait(timeout=300)
    detail = "; ".join(problems) or f"{evals} evals of a live run, each finished"
    return Outcome(
        "eval while the run trains and prunes", "failed" if problems else "survived", detail
    )


def tampered_agent_folders(scratch: Path, reference: Path) -> list[Outcome]:
    """An exported agent with a flipped byte, NaN parameters (checksums rewritten by a
    forger), and a malformed agent.json: `play` refuses each in one line."""
    import json

    import jax.numpy as jnp
    from flax import serialization

    from jaxzero.run.agents.agent_files import write_checksums

    base = scratch / "agent"
    code, output = finish("export", str(reference), "--out", str(base))
    if code != 0:
        return [Outcome("tampered agent folders", "failed", f"export: {_last(output)}")]

    def flipped(folder: Path) -> None:
        path = folder / "params.msgpack"
        path.write_bytes(_flipped(path.read_bytes()))

    def nan(folder: Path) -> None:
        path = folder / "params.msgpack"
        params = serialization.msgpack_restore(path.read_bytes())
        nans = jax.tree.map(lambda x: np.asarray(jnp.full_like(x, jnp.nan)), params)
        path.write_bytes(serialization.msgpack_serialize(nans))
        write_checksums(folder)

    def iteration(folder: Path) -> None:
        facts = json.loads((folder / "agent.json").read_text()) | {"iteration": "xxx"}
        (folder / "agent.json").write_text(json.dumps(facts))
        write_checksums(folder)

    outcomes = []
    for name, tamper in (("a flipped byte", flipped), ("NaN parameters", nan),
                         ('"iteration": "xxx"', iteration)):  # fmt: skip
        folder = scratch / f"agent_{tamper.__name__}"
        shutil.copytree(base, folder)
        tamper(folder)
        code, output = finish("play", "--checkpoint", str(folder), stdin="1\n" * 9)
        problem = one_line_error(code, output)
        result = "failed" if problem else "survived"
        outcomes.append(
            Outcome(f"agent folder with {name}, play", result, problem or _last(output))
        )
    return outcomes


def renumbered_and_edited(scratch: Path, reference: Path) -> list[Outcome]:
    """Resume after two checkpoint folders were swapped, or config.json's game or seed was
    edited: one line naming the numbers or the fields."""
    outcomes = []
    cases = (
        ("two checkpoint folders swapped", "holds iteration"),
        ("config.json's seed edited", "seed"),
        ("config.json's game edited", "game"),
    )
    for name, named in cases:
        run = scratch / name.replace(" ", "_").replace("'", "")
        shutil.copytree(reference, run)
        if "swapped" in name:
            a, b = sorted((run / "checkpoints").glob("[0-9]*"), key=lambda p: int(p.name))[-2:]
            a.rename(run / "checkpoints" / "swap")
            b.rename(a)
            (run / "checkpoints" / "swap").rename(b)
        else:
            config = (run / "config.json").read_text()
            edit = ('"seed": 0', '"seed": 3') if "seed" in name else ("tic_tac_toe", "connect_four")
            (run / "config.json").write_text(config.replace(*edit, 1))
        code, output = finish(*train_args(run, ITERATIONS + 2, 2, resume=True))
        problem = one_line_error(code, output) or (
            "" if named in _last(output) else f"{named} not named"
        )
        outcomes.append(
            Outcome(
                f"{name}, --resume", "failed" if problem else "survived", problem or _last(output)
            )
        )
    return outcomes


def folders_naming_code(scratch: Path) -> list[Outcome]:
    """A shared folder that names code: an agent folder naming ``evil:Net`` with evil.py
    planted beside it (played from inside it), ``"game": "os:abort"`` and
    ``"code:interact"`` (gtp, play), and a ``runs/tic_tac_toe`` naming a planted game
    picked up by ``jaxzero play tic_tac_toe``: each refused in one line, nothing imported
    (the planted modules leave a mark when imported)."""
    import json

    from jaxzero.run.agents.agent_files import shipped_agent, write_checksums

    plant = 'from pathlib import Path\nPath(__file__).with_name("IMPORTED").touch()\n'

    def folder(name: str, section: str, key: str, value: str) -> Path:
        made = scratch / "code" / name
        shutil.copytree(shipped_agent("tic_tac_toe"), made)
        config = json.loads((made / "config.json").read_text())
        (config[section] if section else config)[key] = value
        (made / "config.json").write_text(json.dumps(config))
        facts = json.loads((made / "agent.json").read_text()) | {"game": config["game"]}
        (made / "agent.json").write_text(json.dumps(facts))
        write_checksums(made)  # as anyone can
        return made

    net = folder("net", "network", "kind", "evil:Net")
    (net / "evil.py").write_text(plant)
    home = scratch / "code" / "home"
    (home / "runs").mkdir(parents=True)
    folder("runs_game", "", "game", "evil_game:Game").rename(home / "runs" / "tic_tac_toe")
    (home / "evil_game.py").write_text(plant)
    abort = folder("abort", "", "game", "os:abort")
    console = folder("console", "", "game", "code:interact")
    cases = [
        ("network.kind=evil:Net, play from inside", net, ["play", "--checkpoint", "."]),
        ('"game": "os:abort", play', None, ["play", "--checkpoint", str(abort)]),
        ('"game": "code:interact", gtp', None, ["gtp", "--checkpoint", str(console)]),
        ("runs/tic_tac_toe naming a game, play tic_tac_toe", home, ["play", "tic_tac_toe"]),
    ]
    outcomes = []
    for name, where, command in cases:
        process = jaxzero(*command, stdin=subprocess.PIPE, text=True, cwd=where)
        output, _ = process.communicate("1\nprint('console')\n", timeout=600)
        problem = one_line_error(process.returncode, output)
        marks = list((scratch / "code").rglob("IMPORTED"))
        problem = problem or ("a planted module was imported" if marks else "")
        result = "failed" if problem else "survived"
        outcomes.append(Outcome(f"a shared folder naming code: {name}", result,
                                problem or _last(output)))  # fmt: skip
    return outcomes


def shared_folder_reads(scratch: Path, reference: Path) -> list[Outcome]:
    """What a shared folder may hold where jaxzero expects its own file (issue 45, item 8):
    config.json a symlink to /dev/zero (play) or a FIFO (eval), metrics.jsonl a symlink to
    /dev/zero (report), a FIFO in a checkpoint step (eval): one line within a minute each,
    never a hang or a read without bound."""
    agent = scratch / "shared_agent"
    code, output = finish("export", str(reference), "--out", str(agent))
    if code != 0:
        return [Outcome("shared folders", "failed", f"export: {_last(output)}")]
    runs = {name: scratch / f"shared_{name}" for name in ("fifo", "metrics", "step")}
    for run in runs.values():
        shutil.copytree(reference, run)
    (agent / "config.json").unlink()
    (agent / "config.json").symlink_to("/dev/zero")
    (runs["fifo"] / "config.json").unlink()
    os.mkfifo(runs["fifo"] / "config.json")
    (runs["metrics"] / "metrics.jsonl").unlink()
    (runs["metrics"] / "metrics.jsonl").symlink_to("/dev/zero")
    latest = max((runs["step"] / "checkpoints").glob("[0-9]*"), key=lambda p: int(p.name))
    os.mkfifo(latest / "state" / "extra")
    cases = (
        ("config.json a symlink to /dev/zero, play", ("play", "--checkpoint", str(agent))),
        ("config.json a FIFO, eval", ("eval", str(runs["fifo"]), "--games", "2")),
        ("metrics.jsonl a symlink to /dev/zero, report", ("report", str(runs["metrics"]))),
        ("a FIFO in a checkpoint step, eval", ("eval", str(runs["step"]), "--games", "2")),
    )
    outcomes = []
    for name, args in cases:
        process = jaxzero(*args, stdin=subprocess.PIPE, text=True)
        try:
            output, _ = process.communicate("1\n" * 9, timeout=60)
            problem = one_line_error(process.returncode, output)
        except subprocess.TimeoutExpired:
            process.kill()
            output, problem = process.communicate()[0], "hung: killed after 60 s"
        result = "failed" if problem else "survived"
        outcomes.append(Outcome(name, result, problem or _last(output)))
    return outcomes


def repeated_interrupts(scratch: Path) -> list[Outcome]:
    """A second and third SIGINT, or a second SIGTERM, while the loop's first iteration
    compiles (the compile cache off: seconds of it): one line and 130/143, never 139."""
    outcomes = []
    for sig, count in [(signal.SIGINT, 2), (signal.SIGINT, 3), (signal.SIGTERM, 2)]:
        for wait in (1.0, 2.0, 4.0, 8.0):  # until the loop, not start-up, takes the first
            code, output = _interrupted(scratch / f"again_{sig.name}_{count}", sig, count, wait)
            if "stopping after this iteration" in output:
                break
        last = _last(output)
        problem = (
            "the loop never took the first signal"
            if "stopping after this iteration" not in output
            else f"exit {code}"
            if code != 128 + sig
            else "a traceback"
            if "Traceback" in output
            else ""
            if last.startswith(f"error: interrupted by {sig.name} again")
            else "no one-line notice"
        )
        probe = f"{count} x {sig.name} in the first compile"
        outcomes.append(Outcome(probe, "failed" if problem else "survived", problem or last))
    return outcomes


def _interrupted(run: Path, sig: signal.Signals, count: int, wait: float) -> tuple[int, str]:
    """``count`` x ``sig`` to a new run, the first ``wait`` s after its config.json."""
    shutil.rmtree(run, ignore_errors=True)
    environment = {**os.environ, "JAXZERO_COMPILE_CACHE": "off"}
    process = jaxzero(*train_args(run, 200, 1, resume=False), text=True, env=environment)
    while not (run / "config.json").exists() and process.poll() is None:
        time.sleep(0.02)
    time.sleep(wait)
    for _ in range(count):
        process.send_signal(sig)
        time.sleep(0.3)
    output, _ = process.communicate(timeout=300)
    return process.returncode, output


def _refused(probe: str, args: list[str], expect: str, *, folder: Path | None = None) -> Outcome:
    """``jaxzero ARGS`` ends in one error line holding ``expect``, and makes no ``folder``."""
    code, output = finish(*args)
    problem = one_line_error(code, output)
    if not problem and expect not in _last(output):
        problem = f"another error: {_last(output)}"
    if not problem and folder is not None and folder.exists():
        problem = "a folder was made"
    return Outcome(probe, "failed" if problem else "survived", problem or _last(output))


def sizes_of_searches_and_networks(scratch: Path) -> list[Outcome]:
    """Sizes that grow with the config, refused before anything allocates (issue 45, 6)."""
    run = scratch / "sized"
    train = train_args(run, 2, 1, resume=False)
    return [
        _refused("train evaluation.simulations=1e9 evaluation.every=1",
                 [*train, "evaluation.simulations=1000000000", "evaluation.every=1"],
                 "evaluation.simulations=1000000000 is beyond", folder=run),
        _refused("train network.num_layers=100000", [*train, "network.kind=mlp",
                 "network.num_layers=100000"], "network.num_layers=100000", folder=run),
        _refused("eval --simulations 1e9", ["eval", "jaxzero/agents/tic_tac_toe",
                 "--simulations", "1000000000"], "simulations=1000000000 is beyond"),
        _refused("play --simulations 1e9", ["play", "tic_tac_toe", "--simulations",
                 "1000000000"], "simulations=1000000000 is beyond"),
    ]  # fmt: skip


def settings_for_meaning(scratch: Path) -> list[Outcome]:
    """Settings checked for meaning, not only type (issue 45, 7 and 9)."""
    run = scratch / "meaning"
    train = train_args(run, 2, 1, resume=False)
    cases = [
        ("search.dirichlet_alpha=0", ["search.dirichlet_alpha=0"], "must be > 0 while"),
        ("--grid search.dirichlet_alpha=0.3,0", ["--grid", "search.dirichlet_alpha=0.3,0"],
         "must be > 0 while"),
        ("search.gumbel_scale=inf", ["search.gumbel_scale=inf"], "must be a finite number"),
        ("optim.learning_rate=inf", ["optim.learning_rate=inf"], "must be a finite number"),
        ("seed=2**64", [f"seed={2**64}"], "seed must be between 0 and 4294967295"),
        ("--seeds 2 from seed 2**32 - 1", ["--seeds", "2", "seed=4294967295"], "past"),
        ("--grid K=1e-3,,2e-3", ["--grid", "optim.learning_rate=1e-3,,2e-3"], "empty value"),
        ("--grid of one key twice", ["--grid", "optim.learning_rate=1e-3", "--grid",
         "optim.learning_rate=2e-3"], "given twice"),
    ]  # fmt: skip
    return [_refused(f"train {p}", [*train, *a], e, folder=run) for p, a, e in cases]


def small_refusals(scratch: Path) -> list[Outcome]:
    """Issue 45, item 9: game modules failing on import, a file as the compile cache,
    export before the first checkpoint, a population whose population.json is gone."""
    (scratch / "raises_on_import.py").write_text("raise RuntimeError('no licence')\n")
    (scratch / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n")
    (scratch / "a_file").write_text("mine\n")
    from jaxzero.core.presets import get_preset
    from jaxzero.run.life.driver import prepare_run_dir

    young, run = scratch / "young", scratch / "no_population_json"
    prepare_run_dir(young, get_preset("tic_tac_toe"), resume=False, force=False)  # no checkpoint
    finish(*train_args(run, 1, 1, resume=False), "--seeds", "2")
    (run / "population.json").unlink(missing_ok=True)
    path = f"{scratch}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    with _environment(PYTHONPATH=path):
        return [
            _refused("a game module raising on import", ["train", "raises_on_import:Game",
                     "--out", str(scratch / "m1")], "raised RuntimeError: no licence"),
            _refused("a game module calling sys.exit(0) on import", ["train",
                     "exits_on_import:Game", "--out", str(scratch / "m2")], "sys.exit(0)"),
            _refused("--compile-cache naming a file", ["--compile-cache", str(scratch /
                     "a_file"), "train", "--seconds", "0"], "name a folder"),
            _refused("export before the first checkpoint", ["export", str(young), "--out",
                     str(scratch / "agent")], "wait for it, or train the run longer"),
            _refused("a population's population.json deleted, --resume", ["train",
                     "--resume", "--out", str(run)], "population.json is missing"),
        ]  # fmt: skip


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# --- faults round 4 (issue 56): nothing written through a link, nothing imported from
# where the user stands, no line or file of theirs that breaks a command ------------------

RUN_LINKS = (  # a name a run writes below its folder, the user's thing a link there points at
    (".lock", "thesis.txt"), ("config.json", "thesis.txt"), (".jaxzero-run.json", "thesis.txt"),
    ("metrics.jsonl", "thesis.txt"), ("games.jsonl", "thesis.txt"), ("checkpoints", "photos"),
    (f"checkpoints/{ITERATIONS}", "photos/2019"), ("tb", "photos"),
)  # fmt: skip
REPORT_LINKS = (("report", "photos"), ("report/summary.md", "thesis.txt"))


def users_files(folder: Path) -> Path:
    """A folder of the user's beside the runs: a thesis, and photos."""
    (folder / "photos" / "2019").mkdir(parents=True)
    (folder / "thesis.txt").write_text("four years of work\n")
    (folder / "photos" / "2019" / "a.jpg").write_bytes(b"\xff\xd8 a photo")
    return folder


def snapshot(folder: Path) -> dict[str, object]:
    """Every entry under ``folder``, no link followed: a file's bytes, a folder as None, a
    link as its target (a run's own ``.lock`` file is left out: every start rewrites it)."""
    found: dict[str, object] = {}
    for top, folders, files in os.walk(folder):
        for name in folders + files:
            path = Path(top, name)
            key = path.relative_to(folder).as_posix()
            if path.is_symlink():
                found[key] = f"-> {os.readlink(path)}"
            elif path.is_dir():
                found[key] = None
            elif key != ".lock":
                found[key] = path.read_bytes()
    return found


def _plant_link(path: Path, target: Path | str) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def _through_link(probe: str, link: Path, commands: dict[str, list[str]], kept: list[Path],
                  *, missing: Path | None = None) -> Outcome:  # fmt: skip
    """Each command refused in one line naming ``link`` (its whole path), every folder of
    ``kept`` (the link's target, the user's run) as it was, and ``missing`` never made."""
    before = [snapshot(folder) for folder in kept]
    detail = ""
    for name, args in commands.items():
        code, output = finish(*args)
        problems = [one_line_error(code, output)]
        if not problems[0] and str(link) not in _last(output):
            problems = [f"another error: {_last(output)}"]
        problems += [f"{f.name} changed" for f, b in zip(kept, before, strict=True)
                     if snapshot(f) != b]  # fmt: skip
        if missing is not None and os.path.lexists(missing):
            problems.append(f"{missing.name} was made")
        if any(problems):
            return Outcome(probe, "failed", f"{name}: {'; '.join(filter(None, problems))}")
        detail = detail or f"{name}: {_last(output)}"
    return Outcome(probe, "survived", detail)


def links_below_a_run(scratch: Path, reference: Path) -> list[Outcome]:
    """Issue 56, H1-H4: a link pointing out of a finished run at each name the run, its
    ``--resume``, ``--force`` and its report write: refused in one line naming it, nothing
    written, deleted or made through it; a refused train leaves the run as it was (a
    refused report may have drawn its figures into the run's own report/ first)."""
    outside = users_files(scratch / "outside")
    outcomes = []
    cases: list[tuple[str, str, tuple[str, ...]]]
    cases = [(n, t, ("train --resume", "train --force")) for n, t in RUN_LINKS]
    cases += [(n, t, ("report",)) for n, t in REPORT_LINKS]
    for k, (name, target, names) in enumerate(cases):
        run = scratch / f"planted{k}"
        shutil.copytree(reference, run)
        _plant_link(run / name, outside / target)
        commands = {
            "train --resume": train_args(run, ITERATIONS + 2, 2, resume=True),
            "train --force": [*train_args(run, 2, 1, resume=False), "--force"],
            "report": ["report", str(run)],
        }
        chosen = {c: commands[c] for c in names}
        probe = f"`{name}` a link to the user's {target}: {', '.join(names)}"
        kept = [outside] if names == ("report",) else [outside, run]
        outcomes.append(_through_link(probe, run / name, chosen, kept))
    return outcomes


def links_to_the_users_runs(scratch: Path, reference: Path) -> list[Outcome]:
    """Issue 56, H3: a population's ``members/0`` and a study's ``arms/kind-puct``, each a
    link to a run of the user's (``../../mine``), under ``--force``: refused, that run as
    it was."""
    from jaxzero.core.config import apply_overrides
    from jaxzero.core.presets import get_preset
    from jaxzero.run.studies.study import make_study, write_study

    population, shared = scratch / "population", scratch / "shared"
    mine = [scratch / "mine0", scratch / "mine1"]
    for folder in (*mine, population):
        shutil.copytree(reference, folder)
    _plant_link(population / "members" / "0", Path("..", "..", mine[0].name))
    config = apply_overrides(get_preset("tic_tac_toe"), {"search.kind": "puct"})
    write_study(shared, make_study(config, seeds=2, grid={"search.kind": ["puct", "gumbel"]}))
    _plant_link(shared / "arms" / "kind-puct", Path("..", "..", mine[1].name))
    members = [*train_args(population, 2, 1, resume=False), "--seeds", "2", "--force"]
    arms = [*train_args(shared, 2, 1, resume=False), "--seeds", "2", "--force",
            "--grid", "search.kind=puct,gumbel"]  # fmt: skip
    members_probe = "`members/0` a link to the user's run: train --seeds 2 --force"
    arms_probe = "`arms/kind-puct` a link to the user's run: train --grid ... --force"
    return [
        _through_link(members_probe, population / "members" / "0",
                      {"train --seeds 2 --force": members}, [mine[0]]),
        _through_link(arms_probe, shared / "arms" / "kind-puct",
                      {"train --grid search.kind=puct,gumbel --force": arms}, [mine[1]]),
    ]  # fmt: skip


def dangling_links(scratch: Path, reference: Path) -> list[Outcome]:
    """Issue 56, M1: ``metrics.jsonl`` or ``games.jsonl`` a link to a path outside that does
    not exist: ``--resume`` refuses it, and never creates (or appends to) the target."""
    outside = users_files(scratch / "outside_dangling")
    outcomes = []
    for name in ("metrics.jsonl", "games.jsonl"):
        run = scratch / f"dangling_{name.split('.')[0]}"
        missing = outside / f"made-by-jaxzero-{name}"
        shutil.copytree(reference, run)
        _plant_link(run / name, missing)
        resume = {"train --resume": train_args(run, ITERATIONS + 2, 2, resume=True)}
        probe = f"`{name}` a dangling link out of the run: train --resume"
        outcomes.append(_through_link(probe, run / name, resume, [outside, run], missing=missing))
    return outcomes


STUDY = [  # tests/run/studies/test_study.py's tiny study arm
    "selfplay.batch_size=8", "selfplay.moves_per_iteration=2", "replay.capacity=64",
    "replay.min_size=8", "optim.minibatch_size=8", "optim.updates_per_iteration=1",
    "network.hidden_size=16", "search.num_simulations=2",
    "search.max_num_considered_actions=2", "evaluation.every=2",
]  # fmt: skip


def jobs_from_a_planted_folder(scratch: Path) -> Outcome:
    """Issue 56, H5: a ``--jobs 2`` study started (by the ``jaxzero`` command, as a user
    does) from a folder holding a ``typer.py`` and a ``jaxzero.py``, each leaving a mark
    when imported: the study trains both arms, and no mark appears."""
    here = scratch / "downloads"
    here.mkdir()
    for module in ("typer", "jaxzero"):
        mark = f"Path(__file__).with_name('IMPORTED-{module}').touch()\n"
        (here / f"{module}.py").write_text(f"from pathlib import Path\n{mark}")
    out = scratch / "jobs_study"
    command = [str(Path(sys.executable).with_name("jaxzero")), "train", "tic_tac_toe", *STUDY,
               "--seeds", "2", "--grid", "search.kind=puct,gumbel", "--iterations", "2",
               "--jobs", "2", "--out", str(out)]  # fmt: skip
    environment = {**os.environ, "JAXZERO_MEMBERS_AT_ONCE": "1"}  # no measuring: not probed
    process = subprocess.Popen(command, cwd=here, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        output, _ = process.communicate(timeout=600)
        code = process.returncode
    except subprocess.TimeoutExpired:
        process.kill()
        output, code = process.communicate()[0], "hung 600 s, killed"
    marks = sorted(p.name for p in here.glob("IMPORTED-*"))
    problem = (marks and f"imported from the folder: {', '.join(marks)}") or ""
    problem = problem or (code and f"exit {code}: {_last(output)}") or ""
    problem = problem or ("Traceback" in output and "a traceback") or ""
    trained = [a for a in ("kind-puct", "kind-gumbel") if _iterations(out / "arms" / a) == 2]
    problem = problem or (len(trained) < 2 and f"arms trained: {trained}") or ""
    detail = problem or "both arms trained 2 iterations; neither typer.py nor jaxzero.py ran"
    return Outcome("a --jobs 2 study from a folder holding typer.py and jaxzero.py",
                   "failed" if problem else "survived", detail)  # fmt: skip


def _iterations(arm: Path) -> int:
    """The iterations every member of ``arm`` logged (0 when any logged none)."""
    import json

    logged = [0]
    for metrics in sorted(arm.glob("members/*/metrics.jsonl")):
        lines = metrics.read_text().splitlines()
        logged.append(json.loads(lines[-1])["iteration"] if lines else 0)
    return min(logged[1:]) if len(logged) > 1 else 0


BAD_GAMES = (  # issue 56, M4: each a traceback in report before its fix
    '{"iteration": 40, "kind": "self-play", "players": [], "moves": [4], "returns": []}',
    '{"iteration": 40, "kind": "self-play", "players": ["jaxzero"], "moves": [4, 0],'
    ' "returns": [1.0, -1.0]}',
    '{"iteration": 1e400, "kind": "self-play", "players": ["jaxzero", "jaxzero"],'
    ' "moves": [4, 0], "returns": [1.0, -1.0]}',
)


def bad_games_lines(scratch: Path, reference: Path) -> Outcome:
    """Issue 56, M4: ``"returns": []``, fewer players than returns and an iteration of
    1e400 appended to a run's games.jsonl: ``jaxzero report`` succeeds and draws the games."""
    run = scratch / "bad_games"
    shutil.copytree(reference, run)
    with open(run / "games.jsonl", "a") as games:
        games.write("\n".join(BAD_GAMES) + "\n")
    code, output = finish("report", str(run))
    problem = (code and f"exit {code}: {_last(output)}") or ("Traceback" in output and
                                                            "a traceback") or ""  # fmt: skip
    summary = run / "report" / "summary.md"
    text = summary.read_text() if summary.is_file() else ""
    drawn = len(list((run / "report").glob("game_*.svg")))
    problem = problem or ((not drawn or "Not drawn" in text) and "the games not drawn") or ""
    detail = problem or f"exit 0; games drawn: {drawn}, the {len(BAD_GAMES)} bad lines skipped"
    return Outcome("3 bad games.jsonl lines ([] returns, too few players, iteration 1e400), "
                   "report", "failed" if problem else "survived", detail)  # fmt: skip


HUGE_LINE = 64 << 20  # bytes of one GTP command line: a file of a line, not a command


def huge_gtp_line(scratch: Path) -> Outcome:
    """Issue 56, a LOW: a GTP command line of 64 MB piped into ``jaxzero gtp``: answered
    with an error (its id kept), the next command answered, and the process's peak memory
    within 32 MB of a session of short lines (read in pieces, never held whole)."""
    short = scratch / "gtp_short.txt"
    short.write_text("1 protocol_version\n2 name\nquit\n")
    huge = scratch / "gtp_huge.txt"
    with open(huge, "wb") as lines:
        lines.write(b"1 boardsize " + b"9" * HUGE_LINE + b"\n2 name\nquit\n")
    (base, _, _), (peak, output, code) = _gtp_session(short), _gtp_session(huge)
    grown = (peak - base) / 2**20
    problem = (code and f"exit {code}: {_last(output)}") or ("Traceback" in output and
                                                            "a traceback") or ""  # fmt: skip
    answers = [line for line in output.splitlines() if line[:1] in ("=", "?")]
    if not problem and not (answers[:1] and answers[0].startswith("?1 ")):
        problem = f"answered {answers[:1]}"
    problem = problem or ("=2 jaxzero" not in answers and "the next command unanswered") or ""
    problem = problem or (grown > 32 and f"peak memory {grown:.0f} MB above short lines'") or ""
    detail = problem or f"{answers[0]!r}, then `=2 jaxzero`; peak memory {peak / 2**20:.0f} " \
                        f"MB ({grown:+.0f} MB against short lines)"  # fmt: skip
    return Outcome(f"a GTP command line of {HUGE_LINE >> 20} MB, gtp",
                   "failed" if problem else "survived", detail)  # fmt: skip


def _gtp_session(script: Path) -> tuple[int, str, int]:
    """(peak resident bytes, answers, exit code) of ``jaxzero gtp`` reading ``script``."""
    with open(script, "rb") as stdin, tempfile.TemporaryFile() as stdout:
        process = subprocess.Popen([sys.executable, "-m", "jaxzero", "gtp"], stdin=stdin,
                                   stdout=stdout, stderr=subprocess.STDOUT)  # fmt: skip
        timer = threading.Timer(300, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        answers = stdout.read().decode(errors="replace")
    return usage.ru_maxrss * 1024, answers, process.returncode  # ru_maxrss: kB on Linux


def corrupt_ways_cache(scratch: Path) -> list[Outcome]:
    """Issue 56, a LOW: ``population_ways.json`` (a scratch ``$XDG_CACHE_HOME``) holding
    ``[1,2]``, then its measured entry replaced by ``5``, ``[1,2]`` or ``{"devices":1}``,
    then a FIFO; each time ``train --seeds 2`` with the way not set by hand (the tests'
    variables unset): it measures again, trains and exits 0 within 5 minutes."""
    import json

    from jaxzero.run.life import compile_cache, ways

    environment = {k: v for k, v in os.environ.items()
                   if k not in (ways.AT_ONCE_VAR, ways.HOST_DEVICES_VAR)}  # fmt: skip
    environment.setdefault(compile_cache.ENV_VAR, str(compile_cache.default_folder()))
    environment["XDG_CACHE_HOME"] = str(scratch / "xdg")
    cache = scratch / "xdg" / "jaxzero" / "population_ways.json"
    cache.parent.mkdir(parents=True)
    cases = ("the file `[1,2]`", "its entry `5`", "its entry `[1,2]`",
             'its entry `{"devices":1}`', "a FIFO")  # fmt: skip
    outcomes = []
    for k, case in enumerate(cases):
        probe = f"population_ways.json {case}, train --seeds 2"
        if case == "a FIFO":
            cache.unlink()
            os.mkfifo(cache)
        elif "entry" in case:  # the entry the first case measured, corrupt
            entries = json.loads(cache.read_text()) if cache.is_file() else None
            if not (isinstance(entries, dict) and entries):
                outcomes.append(Outcome(probe, "failed", "no measured entry to corrupt"))
                continue
            value = json.loads(case.split("`")[1])
            cache.write_text(json.dumps(dict.fromkeys(entries, value)))
        else:
            cache.write_text("[1,2]")
        run = scratch / f"ways{k}"
        process = jaxzero(*train_args(run, 2, 1, resume=False), "--seeds", "2",
                          text=True, env=environment)  # fmt: skip
        try:
            output, _ = process.communicate(timeout=300)
            problem = (process.returncode and f"exit {process.returncode}: {_last(output)}") or ""
        except subprocess.TimeoutExpired:
            process.kill()
            output, problem = process.communicate()[0], "hung: killed after 300 s"
        problem = problem or ("Traceback" in output and "a traceback") or ""
        problem = problem or (_iterations(run) != 2 and "the members did not train") or ""
        measured = [line for line in output.splitlines() if "measured a move" in line]
        detail = problem or (measured[-1].strip() if measured else _last(output))
        outcomes.append(Outcome(probe, "failed" if problem else "survived", detail))
    return outcomes


def shown(text: str) -> str:
    for folder in SCRATCH:
        text = text.replace(f"{folder}/", "")
    return text.replace("|", "\\|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10, help="random kill -9s of one run")
    parser.add_argument("--save-kills", type=int, default=4, help="kill -9s during a save")
    parser.add_argument("--interrupts", type=int, default=10, help="SIGINT/SIGTERM in start-up")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    parser.add_argument(
        "--only",
        action="append",
        metavar="PROBE",
        help="run only this probe function (repeatable), e.g. dangling_links",
    )
    args = parser.parse_args()
    begin = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jaxzero-faults-") as folder:
        scratch = Path(folder)
        SCRATCH.append(scratch)
        reference = scratch / "reference"
        started = time.monotonic()
        code, output = finish(*train_args(reference, ITERATIONS, 2, resume=False))
        span = time.monotonic() - started  # a whole run, start-up included
        if code != 0:
            sys.exit(f"the uninterrupted reference run failed:\n{output[-2000:]}")
        probes: list[tuple[Callable[..., Outcome | list[Outcome]], tuple]] = [
            (random_kills, (scratch, reference, args.kills, random.Random(args.seed), span)),
            (kill_during_save, (scratch, reference, args.save_kills)),
            (two_writers, (scratch,)),
            (damaged_checkpoints, (scratch, reference)),
            (truncated_config, (scratch, reference)),
            (read_only_disk, (reference,)),
            (full_disk_at_start, ()),
            (full_disk_mid_save, ()),
            (force_on_a_foreign_folder, (scratch,)),
            (force_deletes_only_ours, (scratch, reference)),
            (interrupts_in_start_up, (scratch, args.interrupts, random.Random(args.seed))),
            (sizes_beyond_memory, (scratch,)),
            (divergence, (scratch,)),
            (diverging_member, (scratch,)),
            (eval_during_training, (scratch,)),
            (tampered_agent_folders, (scratch, reference)),
            (renumbered_and_edited, (scratch, reference)),
            (folders_naming_code, (scratch,)),
            (shared_folder_reads, (scratch, reference)),
            (repeated_interrupts, (scratch,)),
            (sizes_of_searches_and_networks, (scratch,)),
            (settings_for_meaning, (scratch,)),
            (small_refusals, (scratch,)),
            (links_below_a_run, (scratch, reference)),
            (links_to_the_users_runs, (scratch, reference)),
            (dangling_links, (scratch, reference)),
            (jobs_from_a_planted_folder, (scratch,)),
            (bad_games_lines, (scratch, reference)),
            (huge_gtp_line, (scratch,)),
            (corrupt_ways_cache, (scratch,)),
        ]
        outcomes: list[Outcome] = []
        for probe, probe_args in probes:
            if args.only and probe.__name__ not in args.only:
                continue
            found = probe(*probe_args)
            outcomes += found if isinstance(found, list) else [found]
    print(f"Fault probes on tiny tic-tac-toe runs of {ITERATIONS} iterations; "
          f"{time.monotonic() - begin:.0f} s in all.\n")  # fmt: skip
    print("| probe | result | what happened |\n|---|---|---|")
    for outcome in outcomes:
        print(f"| {outcome.probe} | {outcome.result} | {shown(outcome.detail)} |")
    failed = [o.probe for o in outcomes if o.result == "failed"]
    print(f"\n{len(outcomes) - len(failed)} of {len(outcomes)} survived or skipped; failed: "
          f"{', '.join(failed) or 'none'}")  # fmt: skip
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
