"""Studies: arms × seeds in one folder, each arm a population (:mod:`.study`), compared
by one report (:mod:`.comparison`)."""
