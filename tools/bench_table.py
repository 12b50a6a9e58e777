#!/usr/bin/env python3
"""Turn criterion's console output (from `.gpu/run bench`) into the BENCHMARKS.md table.

Usage: tools/bench_table.py bench.log [--torch torch.json]
With --torch (tools/torch_anchor.py --json, same device call), also prints the "Alignment" table:
per align_* group, the automatic plan's GB/s, its ratio to the D2D memcpy of the same bytes
measured in the same group (d2d_same_bytes), torch copy_ on the same views, and x torch; and the
"Layouts" table (layout_* groups but layout_any_*). The "Layouts at any shape" table (layout_any_*
groups, torch_anchor.py --any-shape) and the "Conversions" table (convert_* groups,
torch_anchor.py --convert) are printed whenever the log has those groups, their torch columns from
--torch when given.
Prints, per group, each function's GB/s (10^9 bytes/s, converted from criterion's GiB/s median),
its ratio to the D2D cudaMemcpyAsync limit measured in the same run, and to cudaMemcpy2DAsync of
the same shape where the group has it. Launch-overhead rows are printed as times.
"""
import re
import sys

UNITS = {"GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "B": 1}
TIME = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}


def parse(path):
    rows, name = [], None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        m = re.match(r"^(\S+/\S+)(?:\s+time:\s+\[([^\]]+)\])?", line)
        if m:
            name = m.group(1)
            if m.group(2):
                rows.append((name, "time", m.group(2)))
            continue
        m = re.match(r"^\s+time:\s+\[([^\]]+)\]", line)
        if m and name:
            rows.append((name, "time", m.group(1)))
        m = re.match(r"^\s+thrpt:\s+\[([^\]]+)\]", line)
        if m and name:
            rows.append((name, "thrpt", m.group(1)))
    return rows


def median(field, table):
    """The median of criterion's [low median high] triple, in the table's unit; None for a line
    that is not one (criterion's change lines, "time: [-9.15% ...]", read alike)."""
    parts = field.split()
    try:
        value, unit = float(parts[2]), parts[3]
        return value * table[unit.split("/")[0]]
    except (ValueError, IndexError, KeyError):
        return None


def functions(gbps, group, function, skip=None):
    """(group, the function's name after `function`, GB/s) of every measurement whose group
    starts with `group` (and not with `skip`) and whose function starts with `function`."""
    for name, v in gbps.items():
        g, f = name.split("/", 1)
        if g.startswith(group) and not (skip and g.startswith(skip)) and f.startswith(function):
            yield g, f[len(function):], v


def alignment_table(gbps, torch_rows):
    torch = {r["group"]: r for r in torch_rows}
    print("| shape (group) | plan | GB/s | x D2D (same bytes) | torch copy_ GB/s | x torch | element-width plan GB/s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for g, f, v in functions(gbps, "align_", "auto/"):
        d2d = gbps.get(f"{g}/d2d_same_bytes")
        old = next((x for k, x in gbps.items() if k.startswith(f"{g}/element_width/")), None)
        t = torch.get(g, {}).get("torch_gbps")
        print(f"| {g[len('align_'):]} | {f} | {v:.0f} | {v / d2d:.3f} | "
              f"{t:.0f} | {v / t:.2f} | {old and f'{old:.0f}' or '(same)'} |" if t and d2d else f"| {g} | {v:.0f} |")


def layout_table(gbps, torch_rows):
    torch = {r["group"]: r for r in torch_rows}
    print("| copy (group) | route | GB/s | x D2D (same bytes) | torch eager GB/s | x torch |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for g, f, v in functions(gbps, "layout_", "copy_tensor/", skip=ANY):
        d2d = gbps.get(f"{g}/d2d_same_bytes")
        t = torch.get(g, {}).get("torch_gbps")
        tcol = f"{t:.0f} | {v / t:.2f}" if t else "- | -"
        print(f"| {g[len('layout_'):]} | {f} | {v:.0f} | {v / d2d:.3f} | {tcol} |")


ANY = "layout_any_"


def ratio(a, b, digits=2):
    return f"{a / b:.{digits}f}" if a and b else "-"


def any_shape_table(gbps, torch_rows):
    """"Layouts at any shape": copy_tensor's GB/s and its ratio to the D2D of the same bytes in
    the same criterion group (back-to-back launches); for copies small enough that the host's
    launch may bound those, also both timed from CUDA-graph replays (copy_tensor_graph, d2d_graph:
    GPU time only, as torch is timed); torch eager and torch.compile each against torch's own D2D
    of the same bytes (torch_anchor.py --any-shape); copy_tensor's GB/s (graph-timed where
    measured so) over torch.compile's."""
    torch = {r["group"]: r for r in torch_rows}
    print("| shape | cute-copy GB/s | x D2D | graph-timed GB/s | x D2D graph-timed "
          "| torch eager x D2D | torch.compile x D2D | cute-copy / torch.compile |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for g, f, v in functions(gbps, ANY, "copy_tensor/"):
        t = torch.get(g, {})
        eager, comp, td2d = t.get("torch_gbps"), t.get("compile_gbps"), t.get("d2d_gbps")
        gv = gbps.get(f"{g}/copy_tensor_graph/{f}")
        gcols = f"{gv:.0f} | {ratio(gv, gbps.get(f'{g}/d2d_graph'), 3)}" if gv else "- | -"
        print(f"| {g[len(ANY):]} | {v:.0f} | {ratio(v, gbps.get(f'{g}/d2d_same_bytes'), 3)} | "
              f"{gcols} | {ratio(eager, td2d)} | {ratio(comp, td2d)} | {ratio(gv or v, comp)} |")


def convert_table(gbps, torch_rows):
    """"Conversions": the converting front door's GB/s (convert_tensor, convert_scatter_rows ...:
    bytes read + written) and its ratio to the D2D of the same bytes in the same criterion group;
    torch eager and torch.compile of the same expression (torch_anchor.py --convert) and the front
    door's GB/s over each. Where the group also timed the front door from CUDA-graph replays
    (convert_tensor_graph, at most 64 MiB: GPU time only, as torch is timed), that figure and its
    ratio to the graph-timed D2D (d2d_graph) are the row's."""
    torch = {r["group"]: r for r in torch_rows}
    print("| copy | front door / route | GB/s | x D2D | torch eager GB/s | x eager | torch.compile GB/s | x compile |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for g, f, v in functions(gbps, "convert_", "convert_"):
        door, route = f.split("/", 1)
        if door.endswith("_graph"):
            continue
        d2d = gbps.get(f"{g}/d2d_same_bytes")
        gv = gbps.get(f"{g}/convert_{door}_graph/{route}")
        if gv:
            v, d2d, f = gv, gbps.get(f"{g}/d2d_graph"), f"{f}, graph-timed"
        t = torch.get(g, {})
        eager, comp = t.get("torch_gbps"), t.get("compile_gbps")
        print(f"| {g[len('convert_'):]} | {f} | {v:.0f} | "
              f"{ratio(v, d2d, 3)} | {eager and f'{eager:.0f}' or '-'} | "
              f"{ratio(v, eager)} | {comp and f'{comp:.0f}' or '-'} | {ratio(v, comp)} |")


def main():
    rows = parse(sys.argv[1])
    gbps, times = {}, {}
    for name, kind, field in rows:
        v = median(field, UNITS if kind == "thrpt" else TIME)
        if v is None:
            continue
        if kind == "thrpt":
            gbps[name] = v / 1e9
        else:
            times[name] = v
    limit = next((v for k, v in gbps.items() if k.startswith("limit_d2d")), None)
    if limit:
        print(f"D2D cudaMemcpyAsync limit (1 GiB each way): {limit:.0f} GB/s\n")
    limit = limit or float("nan")
    print("| group | function | GB/s | x D2D | x memcpy2D | time (µs) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    groups = {}
    for name in gbps:
        g, f = name.split("/", 1)
        groups.setdefault(g, []).append(f)
    for g, fs in groups.items():
        m2d = gbps.get(f"{g}/baseline/Memcpy2D")
        for f in fs:
            v = gbps[f"{g}/{f}"]
            r2d = f"{v / m2d:.2f}" if m2d else ""
            t = times.get(f"{g}/{f}", 0.0)
            print(f"| {g} | {f} | {v:.0f} | {v / limit:.3f} | {r2d} | {t:.2f} |")
    print()
    for name, t in times.items():
        if name.startswith("launch/"):
            print(f"| {name} | {t:.2f} µs |")
    torch_rows = []
    if "--torch" in sys.argv:
        import json
        print()
        torch_rows = json.load(open(sys.argv[sys.argv.index("--torch") + 1]))
        alignment_table(gbps, torch_rows)
        print()
        layout_table(gbps, torch_rows)
    if any(k.startswith(ANY) for k in gbps):
        print()
        any_shape_table(gbps, torch_rows)
    if any(k.startswith("convert_") for k in gbps):
        print()
        convert_table(gbps, torch_rows)


if __name__ == "__main__":
    main()
