"""The results page of ``bench_clustering_real.py``, rendered from its records alone
(one JSON object a line: "set", "fit", "criterion" and "scaling" records), so that a
page can be rendered again from a run's ``.jsonl`` file."""
from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

#: the floor of a set is the better of these two methods' NMI
REFERENCE = ("k-means", "spectral-kNN")
PEERS = REFERENCE + ("Ward", "Leiden")
#: Leiden and the time ratios start at this many rows
FROM_ROWS = 500
#: a set "below" the floor: more than BELOW under it; "near": within NEAR of it
BELOW, NEAR = 0.05, 0.02


def spearman(scores, nmis):
    """Spearman correlation of the finite scores with the NMIs; nan when either does not
    vary (or fewer than two scores are finite)."""
    scores, nmis = np.asarray(scores, float), np.asarray(nmis, float)
    ok = np.isfinite(scores)
    if ok.sum() < 2 or np.ptp(nmis[ok]) <= 1e-12 or np.ptp(scores[ok]) <= 0:
        return float("nan")
    return float(spearmanr(scores[ok], nmis[ok])[0])


def criterion_summary(records, among=None):
    """Markdown lines: per criterion, the sets where its pick is within 0.02 of the best
    candidate's NMI, its worst gap, the mean Spearman correlation with NMI, and the sets
    where the published classes score better than every candidate. ``among``: the
    candidate methods considered (default all)."""
    rows = [r for r in records if r["kind"] == "criterion" and "scores" in r]
    table = {}
    for r in rows:
        keep = [i for i, m in enumerate(r["methods"]) if among is None or m in among]
        if len(keep) < 2:
            continue
        nmis = np.array(r["nmi"])[keep]
        for crit, values in r["scores"].items():
            values = np.array(values, float)[keep]
            e = table.setdefault(crit, {"near": 0, "sets": 0, "worst": (0.0, ""), "rho": [],
                                        "classes": 0})
            ok = np.isfinite(values)
            if not ok.any():
                continue
            pick = np.flatnonzero(ok)[np.argmax(values[ok])]
            gap = nmis[pick] - nmis.max()
            e["sets"] += 1
            e["near"] += gap >= -NEAR
            e["worst"] = min(e["worst"], (gap, r["set"]))
            rho = spearman(values, nmis)
            if np.isfinite(rho):
                e["rho"].append(rho)
            e["classes"] += bool(r["classes"][crit] > values[ok].max())
    lines = ["| criterion | sets where its pick is within 0.02 of the best | worst gap | "
             "mean Spearman with NMI (sets) | classes score above every candidate |",
             "|---|---|---|---|---|"]
    for crit, e in table.items():
        worst = f"{e['worst'][0]:+.3f} ({e['worst'][1]})" if e["worst"][1] else "0"
        rho = f"{np.mean(e['rho']):.2f} ({len(e['rho'])})" if e["rho"] else "n/a"
        classes = "n/a" if crit == "stability" else f"{e['classes']} / {e['sets']}"
        lines.append(f"| {crit} | {e['near']} / {e['sets']} | {worst} | {rho} | {classes} |")
    return lines


def outcomes(records):
    """{set: {method: {"nmi", "seconds", "error", "skipped", "note"}}} averaged over seeds
    (a failed seed counts as NMI 0), and the set records by name."""
    sets = {r["set"]: r for r in records if r["kind"] == "set"}
    fits = {}
    for r in records:
        if r["kind"] == "fit":
            fits.setdefault(r["set"], {}).setdefault(r["method"], []).append(r)
    table = {}
    for name, by_method in fits.items():
        for m, runs in by_method.items():
            ok = [r for r in runs if "nmi" in r]
            cell = {"nmi": float(np.mean([r.get("nmi", 0.0) for r in runs])),
                    "seconds": float(np.mean([r["seconds"] for r in ok])) if ok else np.nan,
                    "error": next((r["error"] for r in runs if "error" in r), None),
                    "skipped": runs[0].get("skipped")}
            communities = {r["info"].get("communities") for r in ok if r.get("info")} - {None}
            if communities and communities != {sets[name]["k"]}:
                cell["note"] = f"{'/'.join(map(str, sorted(communities)))} communities"
            table.setdefault(name, {})[m] = cell
    return table, sets


def cell_text(cell):
    if cell is None:
        return ""
    if cell["skipped"]:
        return cell["skipped"]
    if cell["error"] and not np.isfinite(cell["seconds"]):
        return f"error: {cell['error']}"
    text = f"{cell['nmi']:.3f} ({cell['seconds']:.3g} s"
    text += f"; {cell['note']})" if cell.get("note") else ")"
    return text + (f" (a seed failed: {cell['error']})" if cell["error"] else "")


def floor_of(row):
    """max(NMI of k-means, NMI of spectral-kNN), or None when either is missing."""
    if not all(m in row and not row[m]["skipped"] for m in REFERENCE):
        return None
    return max(row[m]["nmi"] for m in REFERENCE)


def set_table(names, table, sets, methods, candidates):
    head = ("| set | n x d | k | repeated rows | " + " | ".join(methods) + " | "
            + " | ".join(f"{m} gap" for m in candidates) + " |")
    lines = [head, "|" + "---|" * (4 + len(methods) + len(candidates))]
    for name in names:
        s, row = sets[name], table.get(name, {})
        size = f"{s['n']} x {s['d']}" + (f" (of {s['rows_of']})" if s["rows_of"] > s["n"] else "")
        size += ", sparse" if s["sparse"] else ""
        floor = floor_of(row)
        gaps = [f"{row[m]['nmi'] - floor:+.3f}" if floor is not None and m in row
                and not row[m]["skipped"] else "" for m in candidates]
        lines.append(f"| {name} | {size} | {s['k']} | {100 * s['repeated']:.0f}% | "
                     + " | ".join(cell_text(row.get(m)) for m in methods) + " | "
                     + " | ".join(gaps) + " |")
    return lines


def estimator_summary(m, names, table, sets):
    """The summary lines of one estimator over the sets ``names`` (see the module)."""
    rows = [(n, table[n]) for n in names if m in table.get(n, {}) and floor_of(table[n])
            is not None and not table[n][m]["skipped"]]
    if not rows:
        return [f"- **{m}**: no set."]
    nmis = np.array([r[m]["nmi"] for _, r in rows])
    gaps = np.array([r[m]["nmi"] - floor_of(r) for _, r in rows])
    below = [n for (n, _), g in zip(rows, gaps) if g < -BELOW]
    peers = ", ".join(f"{p} {np.median([r[p]['nmi'] for _, r in rows]):.3f}" for p in PEERS
                      if p != "Leiden" and all(p in r and not r[p]["skipped"] for _, r in rows))
    leiden = [(r[m]["nmi"], r["Leiden"]["nmi"]) for _, r in rows
              if "Leiden" in r and not r["Leiden"]["skipped"]]
    if leiden:
        peers += (f"; on its sets from {FROM_ROWS} rows ({len(leiden)}), {m} "
                  f"{np.median([a for a, _ in leiden]):.3f} and Leiden "
                  f"{np.median([b for _, b in leiden]):.3f}")
    worst = int(np.argmin(gaps))
    ratios = [(r[m]["seconds"] / r["spectral-kNN"]["seconds"], n) for n, r in rows
              if sets[n]["n"] >= FROM_ROWS and np.isfinite(r[m]["seconds"])
              and r["spectral-kNN"]["seconds"] > 0]
    errors = [n for n, r in rows if r[m]["error"]]
    lines = [f"- **{m}** ({len(rows)} sets): median NMI {np.median(nmis):.3f} (peers: {peers}); "
             f"more than {BELOW} below the floor on {len(below)} "
             f"({', '.join(below) or 'none'}); within {NEAR} of the floor on "
             f"{np.mean(gaps >= -NEAR):.0%}; worst gap {gaps[worst]:+.3f} ({rows[worst][0]})"]
    if ratios:
        top = max(ratios)
        lines[-1] += (f"; time / spectral-kNN on its sets from {FROM_ROWS} rows "
                      f"({len(ratios)}): "
                      f"median {np.median([x for x, _ in ratios]):.2f}, max {top[0]:.1f} "
                      f"({top[1]})")
    lines[-1] += f"; errors: {len(errors)}" + (f" ({', '.join(errors)})" if errors else "") + "."
    return lines


def scaling_table(records):
    rows = [r for r in records if r["kind"] == "scaling"]
    if not rows:
        return []
    methods = list(dict.fromkeys(r["method"] for r in rows))
    lines = ["| series | n | " + " | ".join(f"{m} NMI (s)" for m in methods) + " |",
             "|---|---|" + "---|" * len(methods)]
    for key in dict.fromkeys((r["series"], r["n"]) for r in rows):
        cells = {r["method"]: r for r in rows if (r["series"], r["n"]) == key}
        text = []
        for m in methods:
            r = cells.get(m, {})
            text.append(f"{r['nmi']:.3f} ({r['seconds']:.3g} s)" if "nmi" in r else
                        r.get("error") or r.get("skipped") or "")
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(text) + " |")
    return lines


def report(records, candidates):
    """The results page's body, from the records."""
    table, sets = outcomes(records)
    present = {m for row in table.values() for m in row}
    methods = [m for m in PEERS if m in present] + [m for m in candidates if m in present]
    cands = [m for m in candidates if m in present]
    suite = [n for n, s in sets.items() if s["group"] == "suite"]
    stress = [n for n, s in sets.items() if s["group"] == "stress"]
    repeated = [n for n in suite if sets[n]["integer"] and sets[n]["repeated"] >= 0.10]
    body = ["Each cell: NMI against the published classes (mean over the seeds) and the fit's "
            "wall time. Gap: NMI - max(k-means, spectral-kNN), the floor. A failed fit counts "
            "as NMI 0 in the summaries. Repeated rows: the share of rows equal to an "
            "earlier row. The sets and their preparation: `benchmarks/_real_data.py`.", "",
            f"## Summary ({len(suite)} suite sets)", ""]
    for m in cands:
        body += estimator_summary(m, suite, table, sets)
    body += ["", "## Suite", ""] + set_table(suite, table, sets, methods, cands)
    if repeated:
        body += ["", "## Integer-valued features with at least 10% repeated rows (from the "
                 "suite)", ""] + set_table(repeated, table, sets, methods, cands)
    if stress:
        body += ["", "## Stress sets", "",
                 "Letter at full size; the TF-IDF documents and the single-cell log expression "
                 "given sparse (CSR) and as a dense copy of the same matrix.", ""]
        body += set_table(stress, table, sets, methods, cands)
        body += [f"- {n}: {sets[n]['note']}" for n in stress if sets[n]["note"]]
    criteria = [r for r in records if r["kind"] == "criterion"]
    if criteria:
        body += ["", "## Label-free choice among the candidates", "",
                 "Candidates per set: every method's partition (first seed). Each criterion "
                 "picks its best-scoring candidate; gap = the pick's NMI - the best "
                 "candidate's. Stability: mean adjusted Rand index between a method's "
                 "partition and its refit on seeded 80% subsamples. Classes: the published "
                 "classes scored as one more partition.", ""]
        body += criterion_summary(records)
        body += ["", "Choosing between k-means and spectral-kNN alone:", ""]
        body += criterion_summary(records, among=REFERENCE)
        failed = [f"{r['set']}: {r['error']}" for r in criteria if "error" in r]
        body += [f"- scoring failed on {', '.join(failed)}"] if failed else []
    scale = scaling_table(records)
    if scale:
        body += ["", "## Rows against time", "",
                 "Letter stratified to each size (standardised); blobs: make_blobs, 16 "
                 "features, 10 centers. A method out of time or memory at a size is not run at "
                 "the larger ones of its series.", ""] + scale
    return body
