"""A run's life: the driver (:mod:`.driver`) trains a :class:`~.runs.Run`, one run or a
population (:mod:`.members`), calling its hooks (:mod:`.hooks`); checkpoints and their
retention, signals, the compile cache, the recorded games. Builds on :mod:`jaxzero.run.folder`."""
