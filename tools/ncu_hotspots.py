#!/usr/bin/env python3
"""Where a kernel's instructions go, from ncu's source page.

On the GPU host:
  ncu --section SourceCounters --page source --print-source sass --csv \
      --kernel-name regex:convert_ --launch-count 1 .gpu/bin/bin-cute-copy tensor ... --run --iters 1 \
      | gzip > src.csv.gz
Here: tools/ncu_hotspots.py src.csv.gz [N]

Prints the warp instructions executed and the stall samples of the whole kernel, how many of its
static SASS instructions ran at all, and the N runs of consecutive executed instructions that
executed the most (each with its share, its execution count per entry, and its first
instructions): a 200-instruction run entered once per warp is a routine (an IEEE division), a run
entered once per chunk is the loop body.
"""
import csv
import gzip
import sys


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = list(csv.reader(line for line in f if line.startswith('"')))
    header, body = rows[1], rows[2:]
    ix, sx = header.index("Instructions Executed"), header.index("Warp Stall Sampling (All Samples)")
    count = lambda x, i: int(x[i] or 0)
    total = sum(count(x, ix) for x in body)
    samples = sum(count(x, sx) for x in body)
    print(f"warp instructions executed {total}, stall samples {samples}, static instructions {len(body)}")
    runs, cur = [], None
    for i, x in enumerate(body):
        n = count(x, ix)
        if n == 0:
            if cur:
                runs.append(cur)
            cur = None
            continue
        if cur is None:
            cur = {"first": i, "last": i, "instr": 0, "samples": 0, "entries": n}
        cur["last"] = i
        cur["instr"] += n
        cur["samples"] += count(x, sx)
    if cur:
        runs.append(cur)
    print(f"static instructions that ran: {sum(r['last'] - r['first'] + 1 for r in runs)}")
    for r in sorted(runs, key=lambda r: -r["instr"])[:top]:
        print(f"[{r['first']}..{r['last']}] {r['last'] - r['first'] + 1} instructions, "
              f"{r['instr']} executed ({100 * r['instr'] / max(total, 1):.1f}%), "
              f"{r['samples']} samples ({100 * r['samples'] / max(samples, 1):.1f}%), entered {r['entries']} times")
        for x in body[r["first"]:r["first"] + 3]:
            print("     ", x[1].strip())


if __name__ == "__main__":
    main()
