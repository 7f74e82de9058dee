"""The accelerator suite: one command measuring whatever device JAX sees, beside the peers.

    python benchmarks/accelerator.py --out runs/accelerator          # <= 8 minutes on a GPU
    python benchmarks/accelerator.py --out runs/accelerator_toy --toy   # seconds, any CPU

Sections, each one of this folder's benchmarks run as a subprocess on the same device
(so each compiles and measures on its own, and one that fails cannot take the others
down), each with its own time limit cut from the total ``--minutes``:

* env: steps/s of every game at batch 1k and 64k, ours beside pgx
  (``env_throughput.py``, all XLA threads, wall clock);
* self-play: positions/s of Connect Four (then, near the end, Go 9x9) at batch 1k with
  32 simulations, PUCT and Gumbel, ours beside the pgx + mctx reference and the network
  alone (``selfplay_throughput.py``);
* learner: updates/s of the Connect Four preset's ResNet with our convolution and with
  Flax's stock one (``learner_step.py``; the custom one exists for XLA:CPU, the table
  says which to pick on this backend);
* population: members each way (vmapped, one at a time, over the host's cores) against
  runs one after another, tic-tac-toe and Connect Four (``population.py``);
* training: a minute of ``jaxzero train connect_four`` (its metrics.jsonl: the curve).

The sections run in the order of what they are worth, so that a short lease still brings
back the first ones (a device session has about 15 minutes, start-up included).

It writes ``OUT/accelerator.md`` (each section's table, the device, the commands) and
``OUT/accelerator.json`` (the same, machine-readable: per section its command, exit code,
seconds and output). The suite stops itself: a section that would start after the total
time is spent is skipped and says so. ``--toy`` runs every section at a size a 2-core CPU
finishes in well under a minute (CI runs it so; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from child_env import child_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # tools/ modules, as scripts
from toy import TOY_RUN  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TINY_TRAIN = [*TOY_RUN, "evaluation.every=0"]


@dataclasses.dataclass
class Section:
    name: str
    title: str
    command: list[str]
    limit: float  # seconds this section may take at most
    result: dict = dataclasses.field(default_factory=dict)


def sections(out: Path, toy: bool) -> list[Section]:
    """The suite at full size (a GPU) or at toy size (``--toy``)."""
    python = [sys.executable]
    if toy:
        env = ["--batch-sizes", "8", "--seconds", "0.2", "--games", "tic_tac_toe"]
        play = [("tic_tac_toe", 8)]
        play_args = ["--simulations", "4", "--moves", "2", "--seconds", "0.3"]
        play_args += ["--searches", "gumbel", "--blocks", "1", "--channels", "8"]
        learn = ["--updates", "1", "--seconds", "0.3", "--minibatch", "16"]
        train = ["tic_tac_toe", *TINY_TRAIN, "--iterations", "3"]
    else:
        env = ["--batch-sizes", "1024", "65536", "--seconds", "1"]
        play = [("connect_four", 1024), ("go_9x9", 1024)]
        play_args = ["--simulations", "32", "--moves", "8", "--seconds", "2"]
        learn = ["--updates", "8", "--seconds", "3"]
        train = ["connect_four", "--seconds", "60"]
    env += ["--peers", "pgx", "--xla-threads", "all"]
    # Limits from the first H200 session (docs/accelerators.md): a self-play cell compiles
    # six programs (ours, pgx + mctx, the network; PUCT and Gumbel), about 100 s there.
    found = [Section("env", "Env steps/s", [*python, str(HERE / "env_throughput.py"), *env], 75)]
    for game, batch in play:
        command = [*python, str(HERE / "selfplay_throughput.py"), "--game", game]
        command += ["--batch-size", str(batch), *play_args]
        found.append(Section(f"selfplay_{game}_{batch}", f"Self-play, {game}, B {batch}",
                             command, 120))  # fmt: skip
    learner = [*python, str(HERE / "learner_step.py"), "--game", "connect_four", *learn]
    found.insert(2, Section("learner", "Learner updates", learner, 60))
    if toy:
        members = ["--game", "tic_tac_toe", "--members", "1", "--seconds", "0.2"]
        members += ["--set", "selfplay.batch_size=8", "search.num_simulations=4"]
        members += ["replay.capacity=256", "replay.min_size=16", "optim.minibatch_size=16"]
        members += ["network.hidden_size=16", "selfplay.moves_per_iteration=2"]
    else:
        members = ["--game", "tic_tac_toe", "connect_four", "--members", "8", "--seconds", "1"]
    population = [*python, str(HERE / "population.py"), *members]
    found.insert(3, Section("population", "A population against runs one after another",
                            population, 150))  # fmt: skip
    if toy:  # compiling dominates at toy size, and a CPU compiles slowly
        for section in found:
            section.limit = max(section.limit, 150)
    run = out / "c4_curve"
    training = [*python, "-m", "jaxzero.cli", "train", *train, "--out", str(run), "--force"]
    found.append(Section("training", "Training curve (jaxzero train)", training, 100))
    return found


def run_section(section: Section, deadline: float) -> None:
    """Run ``section`` within its own limit and what is left of the suite's time."""
    left = deadline - time.monotonic()
    if left < 20:
        section.result = {"status": "skipped", "reason": "the suite's time was spent"}
        return
    begin = time.monotonic()
    try:
        done = subprocess.run(
            section.command,
            capture_output=True,
            text=True,
            timeout=min(section.limit, left),
            cwd=ROOT,
            env=child_env(),  # the caller's PYTHONPATH kept, after the repo
        )
        code, status = done.returncode, "ok" if done.returncode == 0 else "failed"
        output = done.stdout if code == 0 else done.stdout + done.stderr[-3000:]
    except subprocess.TimeoutExpired as error:
        output, code, status = (error.stdout or b"").decode(errors="replace"), None, "timed out"
    section.result = {
        "status": status,
        "exit_code": code,
        "seconds": round(time.monotonic() - begin, 1),
        "output": output.strip(),
    }


def training_summary(out: Path) -> str:
    """The curve of the training section: a few rows of its metrics.jsonl."""
    path = out / "c4_curve" / "metrics.jsonl"
    if not path.exists():
        return ""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    picked = rows[:: max(1, len(rows) // 8)] + rows[-1:]
    names = ["iteration", "elapsed", "positions_per_second", "policy_loss", "value_loss"]
    names += [n for n in ("eval/vs_random", "eval/vs_one_ply") if any(n in r for r in rows)]
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    for row in picked:
        lines.append("| " + " | ".join(f"{row.get(n, float('nan')):.4g}" for n in names) + " |")
    return "\n".join(lines)


def device() -> str:
    import jax

    first = jax.devices()[0]
    return f"{len(jax.devices())} x {first.device_kind} ({first.platform}), jax {jax.__version__}"


def write(out: Path, found: list[Section], seconds: float, toy: bool) -> None:
    machine = f"{device()}; {os.cpu_count()} CPU cores, {platform.platform()}"
    text = [
        "# Accelerator suite" + (" (toy size: the figures mean nothing)" if toy else ""),
        "",
        f"Device: {machine}. {seconds:.0f} s in all.",
        "",
    ]
    for section in found:
        r = section.result
        text += [f"## {section.title}", "", f"`{' '.join(section.command[1:])}`", ""]
        text += [f"{r['status']}" + (f" after {r['seconds']} s" if "seconds" in r else ""), ""]
        if r.get("output"):
            text += ["```", r["output"][-6000:], "```", ""]
    curve = training_summary(out)
    if curve:
        text += ["## Training curve rows", "", curve, ""]
    (out / "accelerator.md").write_text("\n".join(text))
    data = {"device": machine, "seconds": seconds, "toy": toy}
    data["sections"] = {s.name: {"command": s.command[1:], **s.result} for s in found}
    (out / "accelerator.json").write_text(json.dumps(data, indent=2) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the table and JSON")
    parser.add_argument("--minutes", type=float, default=8.0, help="the whole suite's limit")
    parser.add_argument("--toy", action="store_true", help="tiny sizes (CI, any CPU)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    begin = time.monotonic()
    deadline = begin + 60 * args.minutes
    found = sections(args.out, args.toy)
    for section in found:
        run_section(section, deadline)
        print(f"{section.name}: {section.result['status']}", flush=True)
    write(args.out, found, time.monotonic() - begin, args.toy)
    print(f"written: {args.out / 'accelerator.md'}, {args.out / 'accelerator.json'}")


if __name__ == "__main__":
    main()
