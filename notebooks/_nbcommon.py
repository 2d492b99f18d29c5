"""Cells shared by the notebooks (imported by the ``_nbXX_*.py`` cell modules)."""

from __future__ import annotations

#: First code cell of every notebook: inline PNGs at a modest dpi, one BLAS thread, and the
#: widget helpers. Every figure is drawn once by a plain ``draw(...)`` with its defaults (the
#: static output a headless run keeps); ``interact(draw, ...)`` adds controls only where
#: ipywidgets is installed.
#: the widget helpers both setups share (up to the docstring of ``interact``)
_WIDGETS = """\
try:
    import ipywidgets as widgets
except ImportError:  # minimal install or headless CI: the static figures stay
    widgets = None


def log_slider(value, low, high, step=0.05):
    \"\"\"A log10-scale slider (built only when ipywidgets is installed).\"\"\"
    return lambda w: w.FloatLogSlider(value=value, base=10, min=math.log10(low),
                                      max=math.log10(high), step=step, continuous_update=False)


def interact(draw, **controls):
    \"\"\"Controls for ``draw`` where ipywidgets is installed; the figure above stays either way."""

SETUP = """\
%matplotlib inline
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small GEMMs: one BLAS thread is faster
import math
import numpy as np
import matplotlib.pyplot as plt
plt.rcParams.update({"figure.dpi": 72, "savefig.dpi": 72})  # keep the committed outputs small
""" + _WIDGETS + """\"\"\"
    if widgets is None:
        print("ipywidgets not installed: the figure above uses the defaults")
        return
    widgets.interact(draw, **{k: c(widgets) if callable(c) else c for k, c in controls.items()})"""

#: First code cell with the shared figure style (``paper_figs._style.notebook``: the paper
#: figures' fonts, 150 dpi inline) and controls that cannot hang a headless run. ``interact``
#: here builds explicit widgets and redraws on ``observe``: unlike ``ipywidgets.interact`` it
#: runs nothing inside an Output widget while the notebook executes, the pattern behind
#: nbconvert's hangs (jupyter/nbconvert#1921, #2003). Notebooks still on :data:`SETUP` switch
#: by importing this instead (and rebuilding).
STYLED_SETUP = """\
%matplotlib inline
import os
import sys
from pathlib import Path
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small GEMMs: one BLAS thread is faster
import math
import numpy as np
import matplotlib.pyplot as plt
import warnings
from IPython.display import display
warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's text bars will do
sys.path.insert(0, str(Path.cwd().parent))  # the notebook runs in notebooks/
from paper_figs._style import notebook as figure_style
figure_style()  # the paper figures' fonts; 150-dpi inline PNGs
""" + _WIDGETS + """

    A control is a factory ``f(widgets)``, a list (a dropdown) or ``(low, high, step)`` (a
    slider); its start value is ``draw``'s default. ``draw`` runs only when a control moves.
    \"\"\"
    if widgets is None:
        print("ipywidgets not installed: the figure above uses the defaults")
        return
    import inspect
    start = {k: v.default for k, v in inspect.signature(draw).parameters.items()}
    made = {}
    for name, c in controls.items():
        if callable(c):
            w = c(widgets)
        elif isinstance(c, tuple):
            w = widgets.FloatSlider(min=c[0], max=c[1], step=c[2], continuous_update=False)
        else:
            w = widgets.Dropdown(options=list(c))
        if start.get(name, inspect.Parameter.empty) is not inspect.Parameter.empty:
            w.value = start[name]
        w.description = name
        made[name] = w
    out = widgets.Output()

    def redraw(_change):
        with out:
            out.clear_output(wait=True)
            draw(**{k: w.value for k, w in made.items()})

    for w in made.values():
        w.observe(redraw, names="value")
    display(widgets.VBox([widgets.HBox(list(made.values())[:2]),
                          widgets.HBox(list(made.values())[2:]), out]))"""
