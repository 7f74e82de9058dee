"""Measuring strength: players, fixed opponents, the match engine, the gate, the round
robin, statistics, solved positions."""
