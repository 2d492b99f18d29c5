"""The file ``dpbounds verify`` keeps its planner's cost-model fits in (``--cost-cache``).

The memo itself (what is kept, under which key) is :mod:`dpbounds.verify.costs`; this module
is its I/O, at the edge: where the file is, reading it (a damaged file is set aside with a
note, never an error: it is a cache) and writing it atomically, merged with what another
process wrote meanwhile.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from dpbounds.verify.costs import CostMemo

__all__ = ["ENV", "default_path", "load", "resolve", "save"]

#: environment variable naming the file (or ``off``) when ``--cost-cache`` is not given
ENV = "DPBOUNDS_COST_CACHE"


def default_path() -> Path:
    """``$XDG_CACHE_HOME/dpbounds/verify-costs.json`` (``~/.cache`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dpbounds" / "verify-costs.json"


def resolve(flag: str | None) -> Path | None:
    """The file of ``--cost-cache flag`` (else ``$DPBOUNDS_COST_CACHE``, else
    :func:`default_path`); ``None`` for ``off`` (or an empty value)."""
    value = flag if flag is not None else os.environ.get(ENV)
    if value is None:
        return default_path()
    if value.strip().lower() in ("", "off"):
        return None
    return Path(value).expanduser()


def load(path: Path) -> tuple[CostMemo, str | None]:
    """The memo kept in ``path`` (empty if there is none) and a note when the file could not
    be read (then an empty memo; the file is rewritten on the next save)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return CostMemo.from_json(json.load(fh)), None
    except FileNotFoundError:
        return CostMemo(), None
    except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError
        text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return CostMemo(), (f"the cost cache {str(path)!r} could not be read ({text}); "
                            "the cost model is probed again")


def save(memo: CostMemo, path: Path) -> str | None:
    """Write ``memo`` to ``path`` (merged with the entries the file holds now, written to a
    temporary file and renamed: a reader never sees half a file); a note if that failed."""
    on_disk, _ = load(path)
    memo.merge(on_disk)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".verify-costs-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(memo.to_json(), fh, allow_nan=False)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError) as exc:
        text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"the cost cache could not be written to {str(path)!r} ({text})"
    memo.changed = False
    return None
