#!/usr/bin/env python3
"""Ratio report for one Google Benchmark JSON file (one run, cases beside their references).

usage: report.py RESULT.json CASE=REFERENCE [CASE=REFERENCE ...]
Prints a Markdown table: median time of each case and its reference, their CVs, and the ratio
case/reference (how many references one case costs). Ratios whose inputs have CV > 10 % are flagged.
"""
import json
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    with open(sys.argv[1]) as f:
        data = json.load(f)
    stats = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "aggregate":
            continue
        name, agg = b["run_name"], b["aggregate_name"]
        stats.setdefault(name, {})[agg] = b["real_time"] if agg != "cv" else b["real_time"]
        stats[name]["unit"] = b.get("time_unit", "ns")
    ctx = data["context"]
    print(f"Host: {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz, "
          f"load {ctx.get('load_avg')}, {ctx.get('date')}\n")
    print("| case | median | CV | reference | median | CV | case / reference |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for pair in sys.argv[2:]:
        case, ref = pair.split("=")
        c, r = stats[case], stats[ref]
        flag = " (noisy)" if max(c["cv"], r["cv"]) > 0.10 else ""
        print(f"| {case} | {c['median']:.2f} {c['unit']} | {100 * c['cv']:.1f} % | {ref} | "
              f"{r['median']:.2f} {r['unit']} | {100 * r['cv']:.1f} % | "
              f"{c['median'] / r['median']:.2f}{flag} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
