"""``--no-avx512``: run a benchmark on this CPU as if it had no AVX-512 (a stand-in, not a CPU).

Issue 36's targets were set on CPUs without AVX-512 (AMD Zen 3 and Zen 1), where NumPy's
``exp`` and ``log1p`` cost 6-10 ns an element against ~0.8-1.0 with AVX-512 and OpenBLAS runs
its AVX2 kernels. A host that has AVX-512 can switch off each library's use of it:

* NumPy's runtime dispatch: ``NPY_DISABLE_CPU_FEATURES`` (``X86_V4 AVX512_ICL AVX512_SPR`` on
  NumPy >= 2.4, whose dispatch targets are the x86-64 levels; the AVX-512 names before);
* numba (LLVM): ``NUMBA_CPU_FEATURES``, the host's features with every ``avx512*`` off;
* OpenBLAS: ``OPENBLAS_CORETYPE=Zen`` (its AVX2 kernels, as on a Zen 1-3);
* numba's cache in a folder of its own (code compiled for the host is not reused).

Measured on a Zen 4 (family 25 model 17, 2026-12-06): NumPy ``exp`` 0.80 -> 4.39 ns and
``log1p`` 1.02 -> 9.65 ns an element, as on the Zen 3 of the issue (~6 ns). What it does not
reproduce is the rest of the core: a Zen 4 without AVX-512 still has its clock, caches and
four 256-bit FP pipes (a Zen 1 has half-width ones), so the loops bound by latency rather
than by vector throughput (the per-step loops at d = 16) run as fast as natively. Report such
numbers as "this host with AVX-512 switched off", never as another CPU's.

Call :func:`apply` first thing, before NumPy, numba or OpenBLAS is imported; child processes
inherit the environment.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import PackageNotFoundError, version

FLAG = "--no-avx512"


def _numpy_names() -> str:
    try:
        major, minor = (int(x) for x in version("numpy").split(".")[:2])
    except (PackageNotFoundError, ValueError):  # pragma: no cover
        major, minor = 2, 4
    if (major, minor) >= (2, 4):
        return "X86_V4 AVX512_ICL AVX512_SPR"
    return ("AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL "
            "AVX512_ICL AVX512_SPR")


def _numba_target() -> tuple[str, str] | None:
    """This CPU's LLVM name and its features with every ``avx512*`` off."""
    try:
        import llvmlite.binding as llvm
    except ImportError:
        return None
    try:
        llvm.initialize_native_target()
    except RuntimeError:  # pragma: no cover - newer llvmlite initialises itself
        pass
    feats = llvm.get_host_cpu_features()
    return llvm.get_host_cpu_name(), ",".join(
        ("-" if k.startswith("avx512") or not v else "+") + k for k, v in sorted(feats.items()))


def apply(argv: list[str] | None = None) -> str | None:
    """If ``--no-avx512`` is in ``argv`` (default ``sys.argv``), remove it and switch AVX-512
    off for NumPy, numba and OpenBLAS in this process and its children; return a line saying
    so (``None`` when the flag is absent)."""
    argv = sys.argv if argv is None else argv
    if FLAG not in argv:
        return None
    while FLAG in argv:
        argv.remove(FLAG)
    if "numpy" in sys.modules:
        raise RuntimeError(f"{FLAG}: NumPy is already imported; call apply() first")
    os.environ["NPY_DISABLE_CPU_FEATURES"] = _numpy_names()
    os.environ["OPENBLAS_CORETYPE"] = "Zen"
    target = _numba_target()
    if target is not None:
        os.environ["NUMBA_CPU_NAME"], os.environ["NUMBA_CPU_FEATURES"] = target
    cache = os.path.join(os.environ.get("TMPDIR", "/tmp"), "dpbounds_numba_no_avx512")
    os.environ["NUMBA_CACHE_DIR"] = cache
    return ("AVX-512 switched off (this host as a stand-in for a CPU without it): "
            f"NPY_DISABLE_CPU_FEATURES={os.environ['NPY_DISABLE_CPU_FEATURES']!r}, "
            "OPENBLAS_CORETYPE=Zen, numba without avx512*")
