#!/usr/bin/env python3
"""Ratio report for one Google Benchmark JSON file (one run, cases beside their references).

usage: report.py RESULT.json [CASE=REFERENCE ...]
Prints every case's median (per item when the case counts items), its CV and its counters, then
for each CASE=REFERENCE pair the ratio of medians case / reference. Ratios whose inputs have a
CV above 10 % are flagged "(noisy)".
"""
import json
import sys


def load(path):
    with open(path) as f:
        data = json.load(f)
    stats = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "aggregate":
            continue
        s = stats.setdefault(b["run_name"], {"unit": b.get("time_unit", "ns"), "counters": {}})
        agg = b["aggregate_name"]
        if "items_per_second" in b and agg in ("median", "mean"):
            s[agg + "_per_item_ns"] = 1e9 / b["items_per_second"] if b["items_per_second"] else 0
        s[agg] = b["real_time"]
        if agg == "median":
            for k, v in b.items():
                if k not in ("name", "run_name", "run_type", "aggregate_name", "repetitions",
                             "threads", "iterations", "real_time", "cpu_time", "time_unit",
                             "items_per_second", "family_index", "per_family_instance_index",
                             "repetition_index", "aggregate_unit") and isinstance(v, (int, float)):
                    s["counters"][k] = v
    return data["context"], stats


def per_item(s):
    return s.get("median_per_item_ns")


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    ctx, stats = load(sys.argv[1])
    print(f"{ctx.get('num_cpus')} CPUs, {ctx.get('mhz_per_cpu')} MHz nominal, load {ctx.get('load_avg')}, "
          f"{ctx.get('date')}\n")
    print("| case | median | per item | CV | counters |")
    print("|---|---:|---:|---:|---|")
    for name, s in stats.items():
        item = per_item(s)
        counters = ", ".join(f"{k} {v:.3g}" for k, v in s["counters"].items())
        print(f"| {name} | {s['median']:.4g} {s['unit']} | {'' if item is None else f'{item:.1f} ns'} | "
              f"{100 * s.get('cv', 0):.1f} % | {counters} |")
    pairs = sys.argv[2:]
    if pairs:
        print("\n| case | reference | case / reference |")
        print("|---|---|---:|")
    for pair in pairs:
        case, ref = pair.split("=")
        c, r = stats[case], stats[ref]
        flag = " (noisy)" if max(c.get("cv", 0), r.get("cv", 0)) > 0.10 else ""
        print(f"| {case} | {ref} | {c['median'] / r['median']:.3f}{flag} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
