"""Figures of reports, drawn off-screen (matplotlib's Agg: no display needed)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt"]
