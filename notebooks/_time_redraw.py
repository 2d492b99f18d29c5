"""CPU time of one redraw of the bounds explorer (notebooks/02) per theorem and per control move:
``python notebooks/_time_redraw.py notebooks/02_bounds_explorer.ipynb [THEOREM ...]`` (Agg backend;
each figure rendered to PNG, as the inline backend does)."""
import sys, time, os, io, contextlib
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
nbpath = os.path.abspath(sys.argv[1]); os.chdir(os.path.dirname(nbpath))
import nbformat
nb = nbformat.read(nbpath, as_version=4)
code = [c.source for c in nb.cells if c.cell_type == "code"]
ns = {}
plt.show = lambda *a, **k: (plt.gcf().savefig(os.devnull, format="png"), plt.close("all"))
def strip(src):
    return "\n".join(l for l in src.splitlines() if not l.startswith("%"))
exec(strip(code[0]), ns)
src = code[1]
exec(src[:src.rfind("\ndraw(")], ns)
names = sys.argv[2:] or ns.get("LIVE", ns["registry"].names())
def timed(label, **kw):
    t0, w0 = time.process_time(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        ns["draw"](**kw)
    print(f"{label:<52} cpu {time.process_time()-t0:7.2f} s  wall {time.perf_counter()-w0:7.2f} s", flush=True)
for n in names:
    timed(f"theorem={n}", theorem=n)
    timed(f"  then d=1000", theorem=n, d=1000.0)
    timed(f"  then N=1e6", theorem=n, d=1000.0, N=1e6)
    timed(f"  then eps=0.1", theorem=n, d=1000.0, N=1e6, eps=0.1)
