"""The compiled core: config and presets, networks, search, self-play, replay, learner,
the one-jit iteration (loop), the data mesh."""
