"""The smallest tic-tac-toe run that still trains, as ``jaxzero train`` overrides: the
scripts that drive whole runs (tools/faults.py, benchmarks/accelerator.py --toy) share it."""

TOY_RUN = [
    "selfplay.batch_size=8",
    "selfplay.moves_per_iteration=3",
    "replay.capacity=256",
    "replay.min_size=16",
    "optim.minibatch_size=16",
    "optim.updates_per_iteration=2",
    "search.num_simulations=4",
    "evaluation.simulations=4",
    "network.hidden_size=16",
    "network.num_blocks=1",
    "network.channels=8",
    "network.value_hidden=16",
    "train.log_every=1",
]
