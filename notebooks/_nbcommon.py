"""Cells shared by the notebooks (imported by the ``_nbXX_*.py`` cell modules)."""

from __future__ import annotations

#: First code cell of every notebook: inline PNGs at a modest dpi, one BLAS thread, and the
#: widget helpers. Every figure is drawn once by a plain ``draw(...)`` with its defaults (the
#: static output a headless run keeps); ``interact(draw, ...)`` adds controls only where
#: ipywidgets is installed.
SETUP = """\
%matplotlib inline
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small GEMMs: one BLAS thread is faster
import math
import numpy as np
import matplotlib.pyplot as plt
plt.rcParams.update({"figure.dpi": 72, "savefig.dpi": 72})  # keep the committed outputs small
try:
    import ipywidgets as widgets
except ImportError:  # minimal install or headless CI: the static figures stay
    widgets = None


def log_slider(value, low, high, step=0.05):
    \"\"\"A log10-scale slider (built only when ipywidgets is installed).\"\"\"
    return lambda w: w.FloatLogSlider(value=value, base=10, min=math.log10(low),
                                      max=math.log10(high), step=step, continuous_update=False)


def interact(draw, **controls):
    \"\"\"Controls for ``draw`` where ipywidgets is installed; the figure above stays either way.\"\"\"
    if widgets is None:
        print("ipywidgets not installed: the figure above uses the defaults")
        return
    widgets.interact(draw, **{k: c(widgets) if callable(c) else c for k, c in controls.items()})"""
