"""export_suite_report.py: export_suite.py's records as a markdown table (a row per model, a column per exporter and
device), the notes behind every cell that is not "right", and the totals per column and overall."""
import collections

STATUSES = ("right", "noise floor", "wrong", "export wrong", "refused", "run error", "crash", "timeout", "not exportable",
            "exporter unavailable", "not available", "degenerate", "error")


def cell(r):
    """One record as a short table cell."""
    s = r["status"]
    if s == "right":
        return f"right ({r['err_torch']:.1e})"
    if s == "noise floor":
        return f"right at fp32 noise ({r['err_torch']:.1e})"
    if s in ("wrong", "export wrong"):
        return f"**{s}** ({r.get('err_torch', float('nan')):.1e})"
    if s == "refused" and r.get("op"):
        return f"refused: {r['op']}"
    if s == "crash":
        return "**CRASH**"
    return s


def table(records, cols):
    """The markdown table (a column per (exporter, device) of cols), its notes and its totals, as text."""
    by = {(r["model"], r["exporter"], r["device"]): r for r in records}
    models = list(dict.fromkeys((r["model"], r["family"]) for r in records))
    lines = ["| model | family | " + " | ".join(f"{e} {d}" for e, d in cols) + " |",
             "| --- | --- | " + " | ".join("---" for _ in cols) + " |"]
    for m, fam in models:
        cells = [cell(by[(m, e, d)]) if (m, e, d) in by else "" for e, d in cols]
        lines.append(f"| {m} | {fam} | " + " | ".join(cells) + " |")
    lines += ["", "Notes (what each cell that is not right says; cells saying the same are listed together):", ""]
    lines += notes(records)
    lines += ["", totals(records, cols)]
    return "\n".join(lines)


def notes(records):
    """A line per distinct (status, error) of the records that are not right, naming the cells that say it."""
    where = collections.OrderedDict()
    for r in records:
        if r["status"] != "right" and r.get("error"):
            where.setdefault((r["status"], r["error"]), []).append(f"{r['model']} {r['exporter']} {r['device']}")
    lines = [f"- **{s}**: {e} ({', '.join(cells)})" for (s, e), cells in where.items()]
    return lines + [f"- **CRASH** before {r['model']} {r['exporter']} {r['device']}: {r['daemon_died_before']}"
                    for r in records if r.get("daemon_died_before")]


def totals(records, cols):
    """Counts per status for each column and overall, as a markdown table."""
    count = collections.Counter((r["exporter"], r["device"], r["status"]) for r in records)
    every = collections.Counter(r["status"] for r in records)
    used = [s for s in STATUSES if every[s]] + sorted(s for s in every if s not in STATUSES)
    lines = ["| status | " + " | ".join(f"{e} {d}" for e, d in cols) + " | all |",
             "| --- | " + " | ".join("---" for _ in cols) + " | --- |"]
    for s in used:
        lines.append(f"| {s} | " + " | ".join(str(count[(e, d, s)]) for e, d in cols) + f" | {every[s]} |")
    lines.append("| **total** | " + " | ".join(str(sum(count[(e, d, s)] for s in used)) for e, d in cols)
                 + f" | {len(records)} |")
    return "\n".join(lines)
