"""Run one command pinned to some CPUs: ``python -m experiments.runner CPUS COMMAND...``.

    python -m experiments.runner 0 jaxzero train connect_four --seconds 1200 --out runs/c4

CPUS is a comma-separated list of CPU ids. A thin script over
:func:`experiments.pinned.pin_and_exec`; :mod:`experiments.pinned` also runs many commands
at a time, each on CPUs of its own (``run_pinned``).
"""

import sys

from experiments.pinned import pin_and_exec

if __name__ == "__main__":
    pin_and_exec(sys.argv[1:])
