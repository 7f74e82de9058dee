"""The ``jaxzero`` command's first lines: Ctrl-C and SIGTERM are handled
(:mod:`jaxzero.run.life.signals`) before anything heavy is imported."""

from __future__ import annotations


def main() -> None:
    """Run the command line with its signal handling in place from the start."""
    from jaxzero.run.life import signals

    signals.install()
    from jaxzero.cli import main as command_line

    command_line()
