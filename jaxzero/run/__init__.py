"""A run on disk: the driver and its hooks, checkpoints, agents, Elo files, reports."""
