"""Per-cell hard-disk counters of a fsage experiment's cells (geriatrix-fig5a's page)."""
import json, sys, glob, os, statistics
rows = []
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    c = json.load(open(f))
    if c.get("status") != "done":
        print("not done:", c["cell"]["id"]); continue
    s = c["samples"][0]
    st = c["environment"]["device"]["stats"]["model"]["stats"]
    n = st["reads"] + st["writes"]
    rows.append(dict(fs=s["fs"], state=s["state"]["kind"], rep=s["rep"], ops=s["ops_per_s"],
        started=c["started_unix"], reads=st["reads"], writes=st["writes"], flushes=st["flushes"], hits=st["read_hits"],
        seeks=st["seeks"], seek_s=st["seek_ns"]/1e9, rot_s=st["rotation_ns"]/1e9,
        xfer_s=st["transfer_ns"]/1e9, busy_s=st["busy_ns"]/1e9,
        ms_per_rq=st["busy_ns"]/1e6/max(1, n), seeks_per_kop=st["seeks"]/(s["ops_per_s"]*25)*1000, rq_per_op=n/(s["ops_per_s"]*25)))
rows.sort(key=lambda r: r["started"])
print("| fs | state | rep | ops/s | reads | writes | flushes | read hits | seeks | seek s | rotation s | transfer s | busy s | busy ms per request | seeks per 1,000 ops | requests per op |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r['fs']} | {r['state']} | {r['rep']} | {r['ops']:,.0f} | {r['reads']:,} | {r['writes']:,} | {r['flushes']:,} | {r['hits']:,} | {r['seeks']:,} | {r['seek_s']:.1f} | {r['rot_s']:.1f} | {r['xfer_s']:.1f} | {r['busy_s']:.1f} | {r['ms_per_rq']:.2f} | {r['seeks_per_kop']:.1f} | {r['rq_per_op']:.3f} |")
print()
print("| fs | fresh ops/s (median; each) | aged ops/s (median; each) | loss (medians) | loss (means) | fresh busy ms per request | aged busy ms per request | fresh seeks per 1,000 ops | aged seeks per 1,000 ops | fresh requests per op | aged requests per op |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for fs in sorted({r['fs'] for r in rows}):
    g = lambda st, k: [r[k] for r in rows if r['fs'] == fs and r['state'] == st]
    if not g('fresh', 'ops') or not g('aged', 'ops'): continue
    fo, ao = statistics.median(g('fresh', 'ops')), statistics.median(g('aged', 'ops'))
    fm, am = statistics.mean(g('fresh', 'ops')), statistics.mean(g('aged', 'ops'))
    each = lambda st: ', '.join(f'{x:,.0f}' for x in g(st, 'ops'))
    print(f"| {fs} | {fo:,.0f} ({each('fresh')}) | {ao:,.0f} ({each('aged')}) | {100*(1-ao/fo):.0f}% | {100*(1-am/fm):.0f}% | {statistics.mean(g('fresh','ms_per_rq')):.2f} | {statistics.mean(g('aged','ms_per_rq')):.2f} | {statistics.mean(g('fresh','seeks_per_kop')):.1f} | {statistics.mean(g('aged','seeks_per_kop')):.1f} | {statistics.mean(g('fresh','rq_per_op')):.3f} | {statistics.mean(g('aged','rq_per_op')):.3f} |")
