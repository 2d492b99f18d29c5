"""The check that a table's "within x%" footer states its rows' own bracket (issue 32), shared
by the tuners' footer tests; it reads the rows, never the result's own helper."""

from __future__ import annotations

import math
import re


def footer_claim_holds(table: str, rows: list[dict], pattern: str, attained: str) -> bool:
    """``pattern``'s first group (a percentage in ``table``) is at least every row's
    ``worst_case_upper / row[attained] - 1`` and at most 10% above the largest (two
    significant digits, rounded up)."""
    m = re.search(pattern, table)
    assert m, table
    claim = float(m.group(1)) / 100
    true = max([r["worst_case_upper"] / r[attained] - 1 for r in rows
                if r[attained] > 0 and math.isfinite(r["worst_case_upper"])], default=0.0)
    return true <= claim <= true * 1.1 + 1e-15
