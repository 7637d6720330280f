#!/usr/bin/env python3
"""Where a kernel's warps spend their time, from ncu's per-instruction stall sampling.

Why: a kernel below its peer is explained by what its warps wait on (the tensor cores, a
barrier, the MUFU pipe, a dependency chain), instruction by instruction; ncu samples that,
but its source page is a CSV of a thousand rows and sixty columns. This reads that CSV and
prints the stall reasons overall, the samples per opcode, and the instructions with the
most samples with their main reasons.

On the GPU machine (one kernel, a few launches in):

    ncu --clock-control base -k regex:'^attention$' --launch-skip 6 --launch-count 1 \\
        --section WarpStateStats --section SourceCounters -o $OUT/k BINARY
    ncu -i $OUT/k.ncu-rep --page source --print-source sass --csv > $OUT/k.csv

Here:  python3 benches/ncu_stalls.py k.csv [--top 25] [--loop]

--loop adds the hottest loop's dynamic instruction mix, by opcode, per warp and iteration:
the instructions from the first to the last whose count is the most frequent one above the
kernel entry's (the loop's straight-line body), weighted by how often each ran, and the
loop's share of the samples. That counts what a warp issues a step rather than what the SASS
holds (code that only the last warp runs, as a refill, counts an eighth). It also estimates
a step's length in cycles (the loop's samples over the selected ones per instruction issued)
and the share of it spent issuing or waiting for the tensor cores.
"""

import argparse
import collections
import csv
import re
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"


def opcode(source):
    """`@!P0 FMNMX.FTZ R1, ...` -> `FMNMX`."""
    text = re.sub(r"^@!?U?P\w+\s+", "", source.strip())
    return text.split(" ")[0].split(".")[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", help="ncu --page source --print-source sass --csv output")
    parser.add_argument("--top", type=int, default=25, help="instructions to list")
    parser.add_argument("--loop", action="store_true", help="the hottest loop's mix per step")
    args = parser.parse_args()

    with open(args.csv, newline="") as f:
        rows = list(csv.reader(f))
    header_at = next((i for i, r in enumerate(rows) if "Source" in r and SAMPLES in r), None)
    if header_at is None:
        sys.exit(f"{args.csv}: no `Source` and `{SAMPLES}` columns (was it --page source --csv?)")
    header = rows[header_at]
    col = {name: i for i, name in enumerate(header)}
    reasons = [c for c in header if c.startswith("stall_") and "Not Issued" not in c]
    data = [r for r in rows[header_at + 1 :] if len(r) >= len(header)]

    def count(row, name):
        value = row[col[name]].replace(",", "")
        return int(value) if value.isdigit() else 0

    total = sum(count(r, SAMPLES) for r in data)
    if total == 0:
        sys.exit(f"{args.csv}: no samples")
    print(f"{len(data)} instructions, {total} samples")

    by_reason = collections.Counter()
    by_opcode = collections.Counter()
    opcode_count = collections.Counter()
    for r in data:
        for reason in reasons:
            by_reason[reason] += count(r, reason)
        op = opcode(r[col["Source"]])
        by_opcode[op] += count(r, SAMPLES)
        opcode_count[op] += 1

    print("\n| stall reason | samples | share |\n|---|---:|---:|")
    for reason, n in by_reason.most_common(12):
        print(f"| {reason} | {n} | {100 * n / total:.1f}% |")
    print("\n| opcode | instructions | samples | share |\n|---|---:|---:|---:|")
    for op, n in by_opcode.most_common(20):
        print(f"| {op} | {opcode_count[op]} | {n} | {100 * n / total:.1f}% |")
    print("\n| samples | instruction | main reasons |\n|---:|---|---|")
    for r in sorted(data, key=lambda r: -count(r, SAMPLES))[: args.top]:
        main_reasons = sorted(((count(r, c), c) for c in reasons), reverse=True)[:3]
        said = ", ".join(f"{c[len('stall_'):]} {n}" for n, c in main_reasons if n)
        # Samples of a reason the CSV has no column for (an HGMMA waiting for the tensor
        # cores to take it, on Hopper) are counted in the total only.
        other = count(r, SAMPLES) - sum(count(r, c) for c in reasons)
        if other > 0:
            said += f", no column {other}"
        print(f"| {count(r, SAMPLES)} | `{r[col['Source']].strip()[:60]}` | {said} |")
    if args.loop:
        hottest_loop(data, col, count, total)


def hottest_loop(data, col, count, total):
    """Prints the dynamic instructions a warp issues per iteration of the hottest loop."""
    executed = "Instructions Executed"
    runs = [count(r, executed) for r in data]
    # The loop body's count: the most frequent one above the kernel's entry (a wait's spin
    # loop runs more often, but is a few instructions).
    above = collections.Counter(n for n in runs if n > runs[0])
    if not above:
        print("\nno loop: every instruction ran at most as often as the first")
        return
    steps = above.most_common(1)[0][0]
    at = [i for i, n in enumerate(runs) if n == steps]
    body = data[at[0] : at[-1] + 1]
    issued = collections.Counter()
    for r in body:
        issued[opcode(r[col["Source"]])] += count(r, executed)
    per_step = sum(issued.values()) / steps
    samples = sum(count(r, SAMPLES) for r in body)
    print(
        f"\nhottest loop: {len(body)} instructions in the SASS, {per_step:.1f} issued per warp "
        f"and step ({steps} warp-steps), {100 * samples / total:.1f}% of the samples"
    )
    # A sample of a warp being selected is one issue cycle: the loop's samples over the
    # selected ones per instruction issued give a step's length in cycles (the yardstick
    # between two kernels: at base clocks, cuDNN's attention about 2,600, ours 3,000).
    selected = sum(count(r, "stall_selected") for r in body)
    if selected:
        per_cycle = selected / per_step
        tensor = sum(
            count(r, SAMPLES)
            for r in body
            if opcode(r[col["Source"]]) in ("HGMMA", "WARPGROUP")
        )
        print(
            f"about {samples / per_cycle:.0f} cycles a warp and step; issuing or waiting for "
            f"the tensor cores (HGMMA, WARPGROUP): {100 * tensor / samples:.0f}% of them"
        )
    print("\n| opcode | per warp and step |\n|---|---:|")
    for op, n in issued.most_common(24):
        print(f"| {op} | {n / steps:.1f} |")


if __name__ == "__main__":
    main()
