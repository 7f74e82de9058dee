"""What a run's files say, drawn and summed up: the run report (:mod:`.report`), a
population's (:mod:`.population_report`), Elo files and Weights & Biases."""
