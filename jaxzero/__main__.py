"""``python -m jaxzero``: the command line, as the ``jaxzero`` command starts it."""

from jaxzero.entry import main

main()
