"""Agents: a run's, an exported folder's or a shipped one's network and search, loaded as
one object (:mod:`.agent`); the agent folder's files (:mod:`.agent_files`)."""
