"""Every cell of a geriatrix-fig7-procedures run with its drive's counters, and the losses per
(file system, drive, copy, drive state). Usage: python3 cells.py OUT/experiment/cells"""
import glob, json, os, statistics, sys

rows = []
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    c = json.load(open(f))
    if c.get("status") != "done":
        print(f"FAILED {c['cell']['id']}")
        continue
    s = c["samples"][0]
    st = c["environment"]["device"]["stats"]["model"]["stats"]
    pl = c["environment"].get("placement") or {}
    pf = pl.get("flash") or {}
    cp = c["cell"]["placement"]
    rows.append(dict(
        fs=s["fs"], state=s["state"]["kind"], model=s["device_model"].split(" ")[0].split("@")[0],
        copy=cp["copy"], drive=cp["drive"], before=pl.get("drive_before", "?"), rep=s["rep"],
        ops=s["ops_per_s"], started=c["started_unix"], host=st["host_pages"], prog=st["programs"],
        gc=st["gc_copies"], er=st["erases"], gc_s=st["gc_ns"] / 1e9, free=st["free_blocks"],
        wa=st["programs"] / max(1, st["host_pages"]), ppo=st["host_pages"] / (s["ops_per_s"] * 25),
        rwait_ms=st["die_wait_ns"] / 1e6 / max(1, st["reads"]),
        copy_wa=pf.get("programs", 0) / max(1, pf.get("host_pages", 0)),
        copy_gc=pf.get("gc_copies", 0), copy_free=pf.get("free_blocks")))
rows.sort(key=lambda r: r["started"])
print("| # | fs | state | drive | copy | drive state asked (found) | rep | ops/s | WA | GC copies | GC s | host pages per op | die wait per read (ms) | copy: WA, GC copies, free blocks after |")
print("| ---: | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
for i, r in enumerate(rows, 1):
    print(f"| {i} | {r['fs']} | {r['state']} | {r['model']} | {r['copy']} | {r['drive']} ({r['before']}) | {r['rep']} | {r['ops']:,.0f} | {r['wa']:.2f} | {r['gc']:,} | {r['gc_s']:.1f} | {r['ppo']:.2f} | {r['rwait_ms']:.1f} | {r['copy_wa']:.2f}, {r['copy_gc']:,}, {r['copy_free']} |")
print()
print("| fs | drive | copy | drive state | fresh ops/s (median; each) | aged ops/s (median; each) | loss (medians) | loss (means) | fresh WA | aged WA | fresh pages/op | aged pages/op | aged copy WA |")
print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for key in sorted({(r["fs"], r["model"], r["copy"], r["drive"]) for r in rows}):
    g = lambda st, k: [r[k] for r in rows if (r["fs"], r["model"], r["copy"], r["drive"]) == key and r["state"] == st]
    if not g("fresh", "ops") or not g("aged", "ops"):
        continue
    fo, ao = statistics.median(g("fresh", "ops")), statistics.median(g("aged", "ops"))
    fm, am = statistics.mean(g("fresh", "ops")), statistics.mean(g("aged", "ops"))
    wa = lambda st: sum(g(st, "prog")) / max(1, sum(g(st, "host")))
    each = lambda st: ", ".join(f"{x:,.0f}" for x in g(st, "ops"))
    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {fo:,.0f} ({each('fresh')}) | {ao:,.0f} ({each('aged')}) | {100*(1-ao/fo):.0f}% | {100*(1-am/fm):.0f}% | {wa('fresh'):.2f} | {wa('aged'):.2f} | {statistics.mean(g('fresh','ppo')):.2f} | {statistics.mean(g('aged','ppo')):.2f} | {statistics.mean(g('aged','copy_wa')):.2f} |")
