#!/usr/bin/env python3
"""Turns the output of benches/run_all.sh (cuprum examples, CUDA C++ / cuBLAS peers, PyTorch
and Triton peers, all in one log) into the benchmark table: a markdown table on stdout, and
bench.csv, bench.png (if matplotlib is importable) and BENCHMARKS.md in --out.

It reads the JSON records the programs print, one object per line, whose "record" field names
the kind (every other line, the tables and lines for people included, is ignored):
  {"record": "result", "case": c, "impl": who, "size": s, "bytes": n, "flops": n, "ms": median}
from the cuprum examples (impl "cuprum") and their peers in benches/peers/ (impl "cuda",
"cublas", "torch", "triton"; case "copy" is the device-to-device copy, the bandwidth ceiling).
Lines `RUNFAIL <label> <status>` (written by run_all.sh) and `FAILED...` are listed as failures,
and so is a record that does not parse. When a (case, impl, size) appears more than once the
fastest median is kept.

The compile and start-up latency section comes from the records of the compile_latency example:
  {"record": "latency", "case": c, "kernels": k, "ptx_bytes": b, "front_us": t, "opt_us": t,
   "ptx_us": t, "jit_ms": t, "cold_ms": t, "warm_ms": t, "names": [kernel, ...]}
                                                              (null = not measured)
  {"record": "latency_process", "role": "jit"|"cold"|"warm", "context_ms": t, "first_load_ms": t}
  {"record": "latency_warning", "case": c, "text": why}
When a case appears more than once, each time column keeps its smallest value.

The first-launch section comes from the startup example's tile rows:
  {"record": "first_launch", "case": c, "cold_ms": t, "warm_ms": t, "second_ms": t, "procs": n}
(the smallest of each column when a case appears more than once), beside the goals of issue 16
and cuTile Rust's published first launches on the same GPU.

Usage: report.py LOG [--out DIR] [--gpu NAME] [--driver VERSION] [--date "YYYY-MM-DD HH:MM UTC"]
       report.py --self-test     (parses benches/testdata/sample.log and checks the rows)
"""

import argparse
import csv
import datetime
import json
import os
import sys

# For each cuprum case: the peer records it is compared with, as (case, impl or None = any
# non-cuprum impl). The case itself (any impl) is always included.
PEERS = {
    "vecadd_gridstride": [("vecadd", "torch"), ("vecadd", "triton")],
    "iter_zip_add": [("vecadd", None)],
    "iter_sum": [("sum", None)],
    "iter_dot": [("dot", None)],
    "sgemm_reg": [("sgemm", "cublas"), ("sgemm", "torch")],
    # hopper_gemm's rungs: the bf16 GEMM of bench_simt's peers (same layout and size).
    "hopper_gemm_128x128_wait0": [("hgemm_mma", "cublas"), ("hgemm_mma", "torch")],
    "hopper_gemm_128x128": [("hgemm_mma", "cublas"), ("hgemm_mma", "torch")],
    "hopper_gemm_128x256": [("hgemm_mma", "cublas"), ("hgemm_mma", "torch")],
    "hopper_gemm_128x256_bf16": [("hgemm_mma", "cublas"), ("hgemm_mma", "torch")],
}

COLUMNS = ["case", "size", "work", "cuprum ms", "peer", "peer ms", "ratio (peer/cuprum)",
           "cuprum throughput", "peer throughput", "% of copy BW"]

EXPLANATION = """\
Each row compares one cuprum kernel with one peer on the same problem, both run in the same
session on the same GPU. **case** is the benchmark (the `iter_*` cases are the iterator track,
`cuprum::iter`; the rest are SIMT kernels). **size** is the problem size (`n=` elements, or rows x
columns, or M x N x K). **work** is what was counted: bytes moved to and from device memory (each
input read once, each output written once) for memory-bound cases, floating-point operations
(2·M·N·K) for matrix multiplies. **cuprum ms** and **peer ms** are medians of many launches (50
or 100) timed with CUDA events after warm-up; when a program ran more than once the faster median
is kept. **peer** is who the kernel is compared with: `cuda` is the same algorithm in CUDA C++
(`nvcc -O3 -arch=sm_90`), `cublas` is cuBLAS (fp32 SGEMM without TF32, or bf16 GEMM with fp32
accumulation), `torch` is PyTorch's own kernel, `triton` a Triton kernel. **ratio** is peer ms /
cuprum ms: 1.00 or more means cuprum is at least as fast. **cuprum/peer throughput** is the
counted work divided by the median time, in GB/s (memory-bound) or TFLOP/s (matrix multiply).
**% of copy BW** is cuprum's GB/s as a percentage of the measured device-to-device copy bandwidth
(the `copy` row: read plus write bytes of a 1 GiB `cudaMemcpy`/`copy_`), the practical ceiling
for memory-bound kernels."""


LATENCY_TIMES = ["front_us", "opt_us", "ptx_us", "jit_ms", "cold_ms", "warm_ms"]
LATENCY_COLUMNS = ["case", "kernels", "PTX bytes", "front end µs", "optimizer µs", "PTX writer µs",
                   "JIT load ms", "cold process ms", "warm process ms"]
# An IR-to-PTX time above this is called out (issue 5: "IR-to-PTX under 1 ms for small kernels").
PTX_BUDGET_US = 1000.0

LATENCY_EXPLANATION = """\
Measured by `crates/cuprum/examples/compile_latency.rs` for the kernels of every benchmark case:
the `#[cuda_module]` of each SIMT example (`bench_simt` holds vecadd_gridstride, saxpy,
softmax_rows and hgemm_mma), and the iterator chains `iter_bench` times. **kernels** is how many
kernels the case's modules hold (named below the table), **PTX bytes** the size of their PTX for
sm_90. Host columns are medians of 50 runs on the host CPU (the example's defaults throughout):
**front end** is the Rust source to IR (`cuprum_front::compile_source`; for the `iter_*` cases, the
first run of the chain on a fresh emulator device minus a second run: tracing and building the IR,
which is already final, so they have no optimizer column), **optimizer** the IR passes
(`cuprum_opt::optimize`), **PTX writer** IR to PTX for sm_90 (validation included). GPU columns are
module loads on the GPU, each in a child process with the driver's own JIT cache off
(`CUDA_CACHE_DISABLE=1`) and after a small module of its own was loaded (so the driver's one-time
start-up is not charged to the first case): **JIT load** loads the PTX straight through the
driver's JIT (what `CUPRUM_CACHE=off` does; median of 3 loads); **cold process** is the load in a
process whose compile cache folder is empty (a miss: the JIT, the register-capped link, the cubin
written to disk); **warm process** the same load in the next process on that folder (a disk hit:
nothing compiled). Cold and warm are medians over 3 such pairs of processes. `-` means not
measured."""


def record_of(line):
    """The record a (stripped) line holds: a JSON object with a "record" field; "bad" for a line
    that looks like one but does not parse; None for any other line."""
    if not line.startswith("{"):
        return None
    try:
        rec = json.loads(line)
    except ValueError:
        return "bad" if '"record"' in line else None
    return rec if isinstance(rec, dict) and "record" in rec else None


def records(lines):
    """The records of `lines`, in order (lines that do not parse left out)."""
    for raw in lines:
        rec = record_of(raw.strip())
        if isinstance(rec, dict):
            yield rec


def number(v):
    """v as a float, or None when it is missing or not a number."""
    if isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def parse_latency(lines):
    """Returns ({case: record}, [case order], {role: [(context_ms, first_load_ms)]}, [warnings])."""
    cases, order, processes, warnings = {}, [], {}, []
    for rec in records(lines):
        kind = rec["record"]
        if kind == "latency_warning":
            warnings.append(f"case={rec.get('case', '?')} {rec.get('text', '')}")
        elif kind == "latency_process":
            processes.setdefault(rec.get("role", "?"), []).append(
                (number(rec.get("context_ms")), number(rec.get("first_load_ms"))))
        elif kind == "latency" and "case" in rec:
            case = rec["case"]
            got = cases.get(case)
            if got is None:
                order.append(case)
                got = cases[case] = {t: None for t in LATENCY_TIMES}
            got["kernels"] = str(rec.get("kernels", "-"))
            got["ptx_bytes"] = str(rec.get("ptx_bytes", "-"))
            got["names"] = [str(n) for n in rec.get("names") or []]
            for t in LATENCY_TIMES:
                v = number(rec.get(t))
                if v is not None and (got[t] is None or v < got[t]):
                    got[t] = v
    return cases, order, processes, warnings


def latency_rows(cases, order):
    def us(v):
        return "-" if v is None else f"{v:.1f}"

    def ms(v):
        return "-" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")

    return [{"case": c, "kernels": cases[c]["kernels"], "PTX bytes": cases[c]["ptx_bytes"],
             "front end µs": us(cases[c]["front_us"]), "optimizer µs": us(cases[c]["opt_us"]),
             "PTX writer µs": us(cases[c]["ptx_us"]), "JIT load ms": ms(cases[c]["jit_ms"]),
             "cold process ms": ms(cases[c]["cold_ms"]),
             "warm process ms": ms(cases[c]["warm_ms"])} for c in order]


def latency_markdown(lines, gpu, driver, now):
    """The "Compile and start-up latency" section (a list of markdown lines), and its rows."""
    cases, order, processes, warnings = parse_latency(lines)
    md = ["## Compile and start-up latency", ""]
    if not order:
        return md + ["Not measured: the log has no `latency` records (did `compile_latency` run?).",
                     ""], []
    rows = latency_rows(cases, order)
    md += [f"{now}, {gpu}, driver {driver}.", "", LATENCY_EXPLANATION, "",
           markdown(rows, LATENCY_COLUMNS), ""]
    md += ["Kernels: " + "; ".join(f"{c}: {', '.join(cases[c]['names']) or '-'}" for c in order)
           + ".", ""]

    def median(vs):
        vs = sorted(v for v in vs if v is not None)
        return vs[len(vs) // 2] if vs else None

    starts = []
    for role, what in (("jit", "JIT"), ("cold", "cold"), ("warm", "warm")):
        got = processes.get(role)
        if got:
            ctx, first = median(c for c, _ in got), median(f for _, f in got)
            starts.append(f"{what}: context {ctx:.1f} ms, first (small) module {first:.2f} ms"
                          if ctx is not None and first is not None else f"{what}: -")
    if starts:
        md += ["Start of each child process (medians; not part of the columns above): "
               + "; ".join(starts) + ".", ""]
    slow = [f"{c} ({cases[c]['ptx_us']:.0f} µs)" for c in order
            if cases[c]["ptx_us"] is not None and cases[c]["ptx_us"] > PTX_BUDGET_US]
    md += [("PTX writer over 1 ms: " + ", ".join(slow) + ".") if slow
           else "The PTX writer took under 1 ms for every case.", ""]
    if warnings:
        md += ["Warnings (a cold load that compiled nothing, or a warm one that compiled):", ""]
        md += [f"- `{w}`" for w in warnings] + [""]
    return md, rows


def parse(lines):
    """Returns ({(case, impl, size): record}, [case order], [failure lines])."""
    recs, order, failures = {}, [], []
    for raw in lines:
        line = raw.strip()
        if line.startswith("RUNFAIL") or line.startswith("FAILED"):
            failures.append(line)
            continue
        got = record_of(line)
        if got == "bad":
            failures.append(f"unparsable: {line}")
            continue
        if got is None or got["record"] != "result":
            continue
        rec = {"case": got.get("case"), "impl": got.get("impl", "cuprum"),
               "size": str(got.get("size", "-")), "bytes": number(got.get("bytes", 0)),
               "flops": number(got.get("flops", 0)), "ms": number(got.get("ms"))}
        if not isinstance(rec["case"], str) or None in (rec["bytes"], rec["flops"], rec["ms"]):
            failures.append(f"unparsable: {line}")
            continue
        if not rec["ms"] > 0:
            continue
        key = (rec["case"], rec["impl"], rec["size"])
        if rec["case"] not in order:
            order.append(rec["case"])
        if key not in recs or rec["ms"] < recs[key]["ms"]:
            recs[key] = rec
    return recs, order, failures


def is_gemm(rec):
    return rec["flops"] > 0 and rec["flops"] > 8 * rec["bytes"]


def throughput(rec):
    if rec is None:
        return None, "-"
    if is_gemm(rec):
        v = rec["flops"] / (rec["ms"] * 1e9)
        return v, f"{v:.1f} TFLOP/s"
    if rec["bytes"] > 0:
        v = rec["bytes"] / (rec["ms"] * 1e6)
        return v, f"{v:.0f} GB/s"
    return None, "-"


def work(rec):
    if is_gemm(rec):
        return f"{rec['flops']:.4g} flop"
    return f"{rec['bytes']:.4g} B"


def build_rows(recs, order):
    copy_bw = max((r["bytes"] / (r["ms"] * 1e6) for r in recs.values()
                   if r["case"] == "copy" and r["bytes"] > 0), default=None)
    rows = []
    for case in order:
        for (c, impl, size), cu in list(recs.items()):
            if c != case or impl != "cuprum":
                continue
            wanted = [(case, None)] + PEERS.get(case, [])
            peers = []
            for (pc, pimpl, psize), rec in recs.items():
                if pimpl == "cuprum" or psize != size:
                    continue
                if any(pc == wc and (wi is None or wi == pimpl) for wc, wi in wanted):
                    if rec not in peers:
                        peers.append(rec)
            bw, tp = throughput(cu)
            pct = f"{100 * bw / copy_bw:.0f}%" if (copy_bw and bw is not None and not is_gemm(cu)) else "-"
            for p in peers or [None]:
                rows.append({
                    "case": case, "size": size, "work": work(cu), "cuprum ms": f"{cu['ms']:.4f}",
                    "peer": f"{p['impl']}" + (f" ({p['case']})" if p["case"] != case else "") if p else "-",
                    "peer ms": f"{p['ms']:.4f}" if p else "-",
                    "ratio (peer/cuprum)": f"{p['ms'] / cu['ms']:.2f}" if p else "-",
                    "cuprum throughput": tp, "peer throughput": throughput(p)[1],
                    "% of copy BW": pct,
                })
    # The ceiling itself, and peer-only cases, for reference.
    cuprum_cases = {c for (c, i, _) in recs if i == "cuprum"}
    for (c, impl, size), rec in recs.items():
        if impl == "cuprum" or c in cuprum_cases:
            continue
        if any(c == wc for ws in PEERS.values() for wc, _ in ws) and c != "copy":
            continue
        rows.append({"case": c, "size": size, "work": work(rec), "cuprum ms": "-", "peer": impl,
                     "peer ms": f"{rec['ms']:.4f}", "ratio (peer/cuprum)": "-", "cuprum throughput": "-",
                     "peer throughput": throughput(rec)[1],
                     "% of copy BW": "100%" if c == "copy" and copy_bw and abs(
                         rec["bytes"] / (rec["ms"] * 1e6) - copy_bw) < 1e-9 else "-"})
    return rows, copy_bw


def markdown(rows, columns=COLUMNS):
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(out)


def write_png(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001 - the chart is optional
        print(f"note: no chart ({e})", file=sys.stderr)
        return False
    pts = [(f"{r['case']} vs {r['peer']}", float(r["ratio (peer/cuprum)"])) for r in rows
           if r["ratio (peer/cuprum)"] != "-"]
    if not pts:
        return False
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(pts) + 1.5))
    labels, vals = zip(*pts)
    colors = ["tab:green" if v >= 0.97 else "tab:orange" if v >= 0.8 else "tab:red" for v in vals]
    ax.barh(range(len(vals)), vals, color=colors)
    ax.set_yticks(range(len(vals)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xlabel("peer time / cuprum time (higher is better for cuprum)")
    ax.set_title("cuprum vs peers")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def report(lines, out=None, gpu="unknown GPU", driver="unknown", date=None):
    recs, order, failures = parse(lines)
    rows, copy_bw = build_rows(recs, order)
    table = markdown(rows)
    print(table)
    if failures:
        print("\nFailures:\n" + "\n".join(f"- {f}" for f in failures))
    now = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    latency, latency_table = latency_markdown(lines, gpu, driver, now)
    print("\n" + "\n".join(latency))
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "bench.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
        if latency_table:
            with open(os.path.join(out, "latency.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=LATENCY_COLUMNS)
                w.writeheader()
                w.writerows(latency_table)
        chart = write_png(rows, os.path.join(out, "bench.png"))
        md = [
            "<!-- Generated by benches/run_all.sh (benches/report.py); do not edit by hand. -->",
            "# cuprum benchmarks", "",
            f"- Date: {now}", f"- GPU: {gpu}", f"- Driver: {driver}",
            f"- Measured device-to-device copy bandwidth: {copy_bw:.0f} GB/s" if copy_bw
            else "- Measured device-to-device copy bandwidth: not measured",
            "", "Regenerate on a GPU machine with `OUT=<dir> bash benches/run_all.sh` "
            "(after packing the examples with gpu-pack) and copy `$OUT/BENCHMARKS.md` here and "
            "`$OUT/{bench.png,bench.csv,latency.csv}` to `benches/results/`.", "",
            "## What the columns mean", "", EXPLANATION, "", "## Results", "", table, "",
        ]
        if chart:
            md += ["![ratios](benches/results/bench.png)", "",
                   "The rows are also in `benches/results/bench.csv`.", ""]
        md += latency
        md += first_launch_markdown(lines)
        if failures:
            md += ["## Failures", ""] + [f"- `{f}`" for f in failures] + [""]
        with open(os.path.join(out, "BENCHMARKS.md"), "w") as f:
            f.write("\n".join(md))
    return rows, failures, latency_table


# Issue 16's goals for a tile GEMM's first launch in a fresh process, and cuTile Rust's
# published first launches on the H200 (seconds to milliseconds), by case.
FIRST_LAUNCH_GOALS = {"tile_gemm": (150.0, 1.0)}
CUTILE_FIRST_LAUNCH_MS = {"tile_add": (230.0, 230.0), "tile_gemm": (570.0, 1030.0)}
FIRST_LAUNCH_COLUMNS = ["kernel", "cold cache ms", "warm cache ms", "second launch ms",
                        "goal (cold / warm)", "cuTile Rust (published)", "cold: cuTile Rust / cuprum"]

FIRST_LAUNCH_EXPLANATION = """\
Measured by `crates/cuprum/examples/startup.rs`: a fresh process's first launch of a tile kernel,
from its embedded tile IR to a finished launch (specialized, lowered, optimized, written as PTX,
compiled and loaded, launched and waited for): `tile_add` on 1024 f32, `tile_gemm` bf16
256x256x256 in 128x256x64 tiles (on an H100 or H200 the Hopper recipe). **cold cache** is a
process whose compile cache folder is empty, with the driver's own JIT cache off; **warm cache**
the next process on the folder the cold one filled; **second launch** the same kernel again in
the cold process. Medians over the processes the record names. The goals are issue 16's; cuTile
Rust's figures are its published first launches on an H200 (it compiles with `tileiras` at run
time; most of either side's cold time is host compilation, so the GPU matters little)."""


def first_launch_markdown(lines):
    """The "First launch of a tile kernel" section (markdown lines; empty when not measured)."""
    cases, order = {}, []
    for rec in records(lines):
        if rec["record"] != "first_launch" or "case" not in rec:
            continue
        case = rec["case"]
        if case not in cases:
            order.append(case)
            cases[case] = {"cold_ms": None, "warm_ms": None, "second_ms": None, "procs": rec.get("procs")}
        for t in ("cold_ms", "warm_ms", "second_ms"):
            v = number(rec.get(t))
            if v is not None and (cases[case][t] is None or v < cases[case][t]):
                cases[case][t] = v
    if not order:
        return []

    def ms(v):
        return "-" if v is None else f"{v:.1f}" if v >= 10 else f"{v:.2f}"

    rows = []
    for c in order:
        got = cases[c]
        goal = FIRST_LAUNCH_GOALS.get(c)
        theirs = CUTILE_FIRST_LAUNCH_MS.get(c)
        cold = got["cold_ms"]
        rows.append({
            "kernel": c, "cold cache ms": ms(cold), "warm cache ms": ms(got["warm_ms"]),
            "second launch ms": ms(got["second_ms"]),
            "goal (cold / warm)": f"<= {goal[0]:.0f} / <= {goal[1]:.0f} ms" if goal else "-",
            "cuTile Rust (published)": (f"{theirs[0]:.0f} ms" if theirs and theirs[0] == theirs[1]
                                        else f"{theirs[0]:.0f}-{theirs[1]:.0f} ms" if theirs else "-"),
            "cold: cuTile Rust / cuprum": (f"{theirs[0] / cold:.1f}-{theirs[1] / cold:.1f}x"
                                           if theirs and cold and theirs[0] != theirs[1]
                                           else f"{theirs[0] / cold:.1f}x" if theirs and cold else "-"),
        })
    return ["## First launch of a tile kernel", "", FIRST_LAUNCH_EXPLANATION, "",
            markdown(rows, FIRST_LAUNCH_COLUMNS), ""]


def self_test():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "testdata", "sample.log")) as f:
        lines = f.readlines()
    import tempfile
    out = tempfile.mkdtemp(prefix="bench_report_")
    rows, failures, latency = report(lines, out, "Test GPU", "0.0")
    by = {(r["case"], r["peer"]): r for r in rows}
    assert by[("vecadd", "cuda")]["ratio (peer/cuprum)"] == "1.00", by[("vecadd", "cuda")]
    assert by[("vecadd", "torch")]["ratio (peer/cuprum)"] == "0.95"
    assert ("vecadd_gridstride", "torch (vecadd)") in by
    assert by[("hgemm_mma", "cublas")]["cuprum throughput"].endswith("TFLOP/s")
    # A rung at a second size pairs with the peer of that size only.
    big = [r for r in rows if r["case"] == "hopper_gemm_128x256_bf16"]
    assert [(r["size"], r["peer"]) for r in big] == [("8192x8192x8192", "torch (hgemm_mma)")], big
    assert big[0]["ratio (peer/cuprum)"] == "0.82", big
    assert by[("sgemm_reg", "cublas (sgemm)")]["peer ms"] == "10.0000"
    assert by[("iter_sum", "torch (sum)")]["% of copy BW"] == "100%"
    assert by[("copy", "torch")]["peer throughput"] == "4000 GB/s"
    assert by[("saxpy", "-")]["peer ms"] == "-"
    assert any("RUNFAIL" in f for f in failures)
    assert any(f.startswith("unparsable: ") for f in failures), failures  # a truncated record
    assert all(" " not in r["case"] for r in rows), rows  # the lines for people are not read
    lat = {r["case"]: r for r in latency}
    assert list(lat) == ["vecadd", "sgemm", "iter_sum"], list(lat)
    assert lat["vecadd"]["front end µs"] == "100.0", lat["vecadd"]  # the smaller of two rounds
    assert lat["vecadd"]["JIT load ms"] == "0.550" and lat["vecadd"]["warm process ms"] == "0.100"
    assert lat["sgemm"]["cold process ms"] == "250.0" and lat["sgemm"]["kernels"] == "2"
    assert lat["iter_sum"]["optimizer µs"] == "-"
    for name in ("bench.csv", "BENCHMARKS.md", "latency.csv"):
        assert os.path.getsize(os.path.join(out, name)) > 0
    with open(os.path.join(out, "BENCHMARKS.md")) as f:
        doc = f.read()
    assert "## Compile and start-up latency" in doc
    assert "PTX writer over 1 ms: sgemm (1200 µs)." in doc
    assert "sgemm: sgemm_tiled, sgemm_reg" in doc
    assert "cold: context 120.0 ms, first (small) module 30.00 ms" in doc, doc
    assert "`case=sgemm the warm process compiled" in doc
    assert "## First launch of a tile kernel" in doc
    assert "| tile_gemm | 140.0 | 1.20 | 0.05 | <= 150 / <= 1 ms | 570-1030 ms | 4.1-7.4x |" in doc, doc
    assert first_launch_markdown([]) == []
    no_latency, _ = latency_markdown([], "g", "d", "now")
    assert "Not measured" in no_latency[2]
    print(f"self-test PASSED (outputs in {out})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?")
    ap.add_argument("--out")
    ap.add_argument("--gpu", default="unknown GPU")
    ap.add_argument("--driver", default="unknown")
    # When a log is reported again later (the report's text changed): the run's own date.
    ap.add_argument("--date", help='the run\'s date, "YYYY-MM-DD HH:MM UTC" (default: now)')
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return 0
    if not args.log:
        ap.error("a log file is needed")
    with open(args.log, errors="replace") as f:
        report(f.readlines(), args.out, args.gpu, args.driver, args.date)
    return 0


if __name__ == "__main__":
    sys.exit(main())
