"""A run, population, study or agent folder: its names (:mod:`.layout`), writes that never
follow a link (:mod:`.nolink`), bounded reads (:mod:`.reads`), the manifest of what jaxzero
wrote (:mod:`.manifest`), checksums, the config file and how a state is stored. Imports
nothing else of :mod:`jaxzero.run`."""
