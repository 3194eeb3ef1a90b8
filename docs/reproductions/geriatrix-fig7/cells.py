import json, sys, glob, os, statistics
rows = []
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    c = json.load(open(f))
    if c.get("status") != "done":
        rows.append((c["cell"]["id"], "FAILED")); continue
    s = c["samples"][0]
    st = c["environment"]["device"]["stats"]["model"]["stats"]
    pl = c["environment"].get("placement") or {}
    pf = pl.get("flash") or {}
    cell = c["cell"]
    model = s["device_model"].split(" ")[0].split("@")[0]
    rows.append(dict(fs=s["fs"], state=s["state"]["kind"], model=model, rep=s["rep"],
        ops=s["ops_per_s"], started=c["started_unix"],
        host=st["host_pages"], prog=st["programs"], gc=st["gc_copies"], er=st["erases"],
        gc_s=st["gc_ns"]/1e9, free=st["free_blocks"], wa=st["programs"]/max(1, st["host_pages"]),
        waits=st["die_waits_same"]+st["die_waits_other"], wait_s=st["die_wait_ns"]/1e9,
        reads=st["reads"], writes=st["writes"], ppo=st["host_pages"]/(s["ops_per_s"]*25), rwait_ms=st["die_wait_ns"]/1e6/max(1,st["reads"]),
        copy_wa=pf.get("programs",0)/max(1,pf.get("host_pages",0)), copy_gc=pf.get("gc_copies",0),
        copy_er=pf.get("erases",0), copy_s=pl.get("copy_s",0), copy_free=pf.get("free_blocks")))
rows = [r for r in rows if isinstance(r, dict)]
rows.sort(key=lambda r: r["started"])
print("| fs | state | drive | rep | ops/s | host pages | programs | WA | GC copies | erases | GC s | free blocks after | host pages per op | die waits (page reads) | die wait per host read (ms) | copy: WA, GC copies, erases, free blocks after |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
for r in rows:
    print(f"| {r['fs']} | {r['state']} | {r['model']} | {r['rep']} | {r['ops']:,.0f} | {r['host']:,} | {r['prog']:,} | {r['wa']:.2f} | {r['gc']:,} | {r['er']:,} | {r['gc_s']:.1f} | {r['free']} | {r['ppo']:.2f} | {r['waits']:,} | {r['rwait_ms']:.1f} | {r['copy_wa']:.2f}, {r['copy_gc']:,}, {r['copy_er']:,}, {r['copy_free']} |")
print()
print("| fs | drive | fresh ops/s (median) | aged ops/s (median) | loss | fresh WA | aged WA | fresh erases | aged erases | fresh GC s | aged GC s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
keys = sorted({(r['fs'], r['model']) for r in rows})
for fs, m in keys:
    g = lambda st, k: [r[k] for r in rows if r['fs']==fs and r['model']==m and r['state']==st]
    if not g('fresh','ops') or not g('aged','ops'): continue
    fo, ao = statistics.median(g('fresh','ops')), statistics.median(g('aged','ops'))
    wa = lambda st: sum(g(st,'prog'))/max(1,sum(g(st,'host')))
    print(f"| {fs} | {m} | {fo:,.0f} ({', '.join(f'{x:,.0f}' for x in g('fresh','ops'))}) | {ao:,.0f} ({', '.join(f'{x:,.0f}' for x in g('aged','ops'))}) | {100*(1-ao/fo):.0f}% | {wa('fresh'):.2f} | {wa('aged'):.2f} | {statistics.mean(g('fresh','er')):,.0f} | {statistics.mean(g('aged','er')):,.0f} | {statistics.mean(g('fresh','gc_s')):.1f} | {statistics.mean(g('aged','gc_s')):.1f} |")
