"""The report of bench/compare_cache.py: its cases' runs as median [min-max] over the repeats, the ratios it reports
(each taken per repeat: the runs of one repeat are adjacent in time), and the tables it prints."""
import statistics

import cache_sizes


def summary(values):
    """median [min-max] of a list of numbers, and the numbers."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def report(args, cases, sizes):
    out = {"single": {}, "trainers": {}, "half": {}}
    for name, runs in cases.items():
        if name.startswith("trainers"):
            out["trainers"][name[9:]] = {"img_per_s": summary([r[0] for r in runs])}
            if len(runs[0]) > 1:
                out["trainers"][name[9:]]["worker_cpu_ms_per_image"] = summary([r[1] for r in runs])
        elif name == "half cache":
            out["half"] = {"max_bytes": runs[0][0], "hit_rate": summary([r[1] for r in runs]),
                           "hit_rate_from_file_bytes": summary([r[2] for r in runs]),
                           "steady_s": summary([r[3] for r in runs])}
        else:
            out["single"][name] = {"epoch0_s": summary([r[0] for r in runs]), "steady_s": summary([r[1] for r in runs])}
    def per_repeat(a, b, i, scale=1):  # b's figure over a's, per repeat (runs of one repeat are adjacent in time)
        return summary([scale * rb[i] / ra[i] for ra, rb in zip(cases[a], cases[b])])
    steady = lambda a, b: per_repeat(a, b, 1)  # noqa: E731  (seconds: a faster than b)
    rate = lambda a, b: per_repeat(b, a, 0)  # noqa: E731  (img/s of "trainers a" over "trainers b")
    out["ratios"] = {
        "val224_cached / val224": steady("val224_cached", "val224"),
        "val224_u8_cached / val224_u8": steady("val224_u8_cached", "val224_u8"),
        "train224_cached / train224": steady("train224_cached", "train224"),
        "trainers cached / uncached": rate("trainers train224_cached", "trainers train224"),
        "val224 / DataLoader": steady("val224", "DataLoader val224"),
        "val224_cached / DataLoader val224": steady("val224_cached", "DataLoader val224"),
        "val224_u8 / DataLoader val224_u8": steady("val224_u8", "DataLoader val224_u8"),
        "val224_u8_cached / DataLoader val224_u8": steady("val224_u8_cached", "DataLoader val224_u8"),
        "train224 / DataLoader": steady("train224", "DataLoader train224"),
        "train224_cached / DataLoader train224": steady("train224_cached", "DataLoader train224"),
        "trainers uncached / DataLoader": rate("trainers train224", "trainers DataLoader train224"),
        "trainers cached / DataLoader": rate("trainers train224_cached", "trainers DataLoader train224"),
    }
    out["sizes"] = sizes
    return out


def fmt(s, digits=4):
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"


def print_tables(args, out):
    print(f"ImageFolder of {args.images} JPEGs ({args.root}), batch {args.batch_size}, {args.workers} workers, "
          f"{args.epochs} epochs per run, median [min-max] of {args.repeats} run(s)\n")
    print("| pipeline | epoch 0 s | epochs >= 1 s/epoch | img/s (epochs >= 1) |")
    print("|---|---:|---:|---:|")
    for name, r in out["single"].items():
        print(f"| {name} | {fmt(r['epoch0_s'])} | {fmt(r['steady_s'])} | {args.images / r['steady_s']['median']:,.0f} |")
    print(f"\n| {args.trainers} trainers, seeds 1..{args.trainers} | aggregate img/s (epochs >= 1) "
          "| batchd worker CPU ms/img |")
    print("|---|---:|---:|")
    for name, r in out["trainers"].items():
        cpu = fmt(r["worker_cpu_ms_per_image"]) if "worker_cpu_ms_per_image" in r else "n/a"
        print(f"| {name} | {fmt(r['img_per_s'], 0)} | {cpu} |")
    h, sz = out["half"], out["sizes"]
    print(f"\nhalf cache: entries of train224_cached {sz['entry_bytes']:,} bytes for {args.images} images "
          f"(files {sz['file_bytes']:,} bytes); cache.max_bytes = {h['max_bytes']:,} (index "
          f"{cache_sizes.index_bytes(h['max_bytes']):,}); hit rate over epochs >= 1 {fmt(h['hit_rate'])} (batchctl "
          f"cache: hits / samples), {fmt(h['hit_rate_from_file_bytes'])} (from the file bytes read), "
          f"{fmt(h['steady_s'])} s/epoch\n")
    print("ratios at epochs >= 1, per repeat, median [min-max]:")
    for name, value in out["ratios"].items():
        print(f"  {name}: {fmt(value, 2)}x")
