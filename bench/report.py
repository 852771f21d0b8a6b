#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Table and JSON of a bench/run.sh run.

  report.py RESULTS.tsv OUT.json [KEY=VALUE...]

RESULTS.tsv has one line per figure: workload, filesystem (smrfs or
passthrough), value, unit, and "hi" or "lo" (whether a higher or a lower
value is better). The ratio is smrfs's performance over passthrough's, so
above 1 smrfs is faster whichever way the unit goes. KEY=VALUE pairs go
into the JSON's "run" object (machine, date, options).
"""
import json
import sys

GOALS = {
    "seq-write-1M": 0.95, "seq-read-1M": 0.95,
    "rand-write-4k": 1.0, "rand-read-4k": 0.8, "fsync-write-4k": 0.8,
    "create": 0.5, "stat": 0.5, "unlink": 0.5,
}


def main():
    rows = {}
    order = []
    with open(sys.argv[1]) as f:
        for line in f:
            w, fs, val, unit, better = line.rstrip("\n").split("\t")
            if w not in rows:
                rows[w] = {"unit": unit, "better": better}
                order.append(w)
            rows[w][fs] = float(val)
    run = dict(kv.split("=", 1) for kv in sys.argv[3:])
    out = []
    print("%-22s %14s %14s %-8s %7s %6s" %
          ("workload", "smrfs", "passthrough", "unit", "ratio", "goal"))
    for w in order:
        r = rows[w]
        s, p = r.get("smrfs"), r.get("passthrough")
        ratio = None
        if s and p:
            ratio = s / p if r["better"] == "hi" else p / s
        goal = GOALS.get(w)
        out.append({"workload": w, "unit": r["unit"], "better": r["better"],
                    "smrfs": s, "passthrough": p, "ratio": ratio,
                    "goal": goal})

        def fmt(v):
            return "-" if v is None else "%.4g" % v
        print("%-22s %14s %14s %-8s %7s %6s" %
              (w, fmt(s), fmt(p), r["unit"],
               "-" if ratio is None else "%.2f" % ratio,
               "" if goal is None else ">=%.2g" % goal))
    with open(sys.argv[2], "w") as f:
        json.dump({"run": run, "results": out}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
