"""Go on disk and on the wire: SGF records, the GTP engine, game records of runs and matches."""
