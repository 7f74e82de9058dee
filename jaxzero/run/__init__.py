"""A run on disk, laid out by idea; each sub-package builds only on those before it:

* :mod:`jaxzero.run.folder`: the folder itself: every name in it, writes that never follow
  a link, bounded reads, the manifest, checksums, the config file, stored states;
* :mod:`jaxzero.run.life`: a run's life: the driver and its hooks (one run or a
  population), checkpoints and retention, signals, the compile cache, recorded games;
* :mod:`jaxzero.run.agents`: agents loaded from runs, exported and shipped folders;
* :mod:`jaxzero.run.reports`: reports, a population's report, Elo files, W&B;
* :mod:`jaxzero.run.studies`: studies of arms and their comparison.
"""
