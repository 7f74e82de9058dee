"""``python -m jaxzero.cli``: the command line, as ``jaxzero`` runs it."""

from jaxzero.cli import main

main()
