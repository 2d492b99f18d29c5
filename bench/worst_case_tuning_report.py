"""Format ``bench/worst_case_tuning.py``'s JSON as the Markdown table of
``bench/worst_case_tuning_results.md``: ``python bench/worst_case_tuning_report.py IN.json``."""

from __future__ import annotations

import json
import sys


def main() -> None:
    data = json.load(open(sys.argv[1]))
    print(f"CPU: {data['cpu']}\n")
    print("| # | kappa | eps | d | m/n | row | alpha | beta | T | worst case | bound | MC mean "
          "(± s.e.) | z | CPU tune (s) | search vs oracle |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in data["problems"]:
        s = p["setting"]
        kappa = s["L"] / s["mu"]
        mn = s.get("m", s["n"]) / s["n"]
        for i, r in enumerate(p["rows"]):
            head = (f"| {p['k']} | {kappa:.3g} | {s['epsilon']:g} | {s['d']} | {mn:.3g} "
                    if i == 0 else "| | | | | ")
            mc = (f"{r['mc']:.4g} ± {r['mc_se']:.2g}" if "mc" in r else "—")
            z = f"{r['z']:+.2f}" if "z" in r else "—"
            tail = (f"| {p['cpu_tune_s']:.1f} | {100 * p['search_gap']:+.3f}% |" if i == 0
                    else "| | |")
            print(f"{head}| {r['label']} | {r['alpha']:.4g} | {r['beta']:.6g} | {r['T']} | "
                  f"{r['worst']:.4g} | {r['bound']:.4g} | {mc} | {z} {tail}")


if __name__ == "__main__":
    main()
