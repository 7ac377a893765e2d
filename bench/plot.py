#!/usr/bin/env python3
"""Draws the benchmark scripts' JSON as PNG charts (docs/benchmarks.md shows them, from docs/img/).

    bench/plot.py [--out DIR] JSON...          e.g. bench/plot.py --out docs/img bench/results/*.json

Each JSON is what a bench script printed or wrote with --json, recognised by its "benchmark" field (a scaling.py
JSON from before that field, by its "workers" list). N below is the machine's core count (machine.nproc):
  compare_fmnist, compare_imagefolder, compare_webdataset, compare_tokens, compare_recipes
                  -> DIR/batchd-vs-dataloader-Ncore.png: one panel per pipeline, batchd's steady-state samples/s
                     (images/s for the image pipelines) beside its peer's, the ratio printed on batchd's bar; all the
                     compare JSONs of one machine size make one chart.
  scaling         -> DIR/scaling-Ncore.png: samples/s against workers, batchd vs DataLoader, a panel per pipeline.
  compare_python  -> DIR/python-vs-cpp-Ncore.png: per pipeline, the batchd.Loader Python loop beside batchd-bench
                     (C++) and, unpaired, DataLoader; the Python/C++ ratio printed on the Python bar.
  compare_peers   -> DIR/peers-Ncore.png: per recipe, every system's steady-state images/s (a system that could not
                     run is left out, named under the panel), its ratio to DataLoader printed on its bar.
Prints "written: PATH: panel, panel, ..." for each PNG. A JSON that does not exist is skipped (said on stderr). One
that cannot be read, is not JSON, has an unknown "benchmark", lacks a field its kind needs, or would draw the same
panel or file as another ends the run with a message naming the file. Exit status: 0 when at least one chart was
written, 1 on such an error or when nothing was left to draw, 2 on a usage error. Needs matplotlib (the project venv's,
./setup.sh --tests); draws with the Agg backend (no display).
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import EngFormatter, LogLocator, NullFormatter  # noqa: E402

# "benchmark" -> what the pipelines' panels are labelled with (the data each compare script reads).
COMPARE = {"compare_fmnist": "Fashion-MNIST", "compare_imagefolder": "ImageFolder JPEGs",
           "compare_webdataset": "WebDataset shards", "compare_tokens": "token file",
           "compare_recipes": "recipe (ImageFolder JPEGs)"}
KINDS = sorted([*COMPARE, "scaling", "compare_python", "compare_peers"])
PYTHON_SYSTEMS = ["torch.DataLoader", "batchd.Loader", "batchd-bench"]
LABELS = {"batchd.Loader": "batchd.Loader (Python)", "batchd-bench": "batchd-bench (C++)"}  # x tick labels


class PlotError(Exception):
    """A message naming the input file and what is wrong with it."""


def load(path):
    """(kind, data) of the JSON object in `path`; None when the file does not exist. PlotError otherwise."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise PlotError(f"{path}: cannot read it: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PlotError(f"{path}: not valid JSON ({e}); write it with the bench script's --json")
    if not isinstance(data, dict):
        raise PlotError(f"{path}: holds a JSON {type(data).__name__}, not the object a bench script's --json writes")
    if not isinstance(data.get("machine", {}), dict):
        raise PlotError(f"{path}: \"machine\" is not an object; write it again with the bench script's --json")
    kind = data.get("benchmark") or ("scaling" if isinstance(data.get("workers"), list) else None)
    if kind not in KINDS:
        raise PlotError(f"{path}: unknown \"benchmark\": {kind!r}; expected one of {', '.join(KINDS)} (the field "
                        "bench/*.py --json writes)")
    return kind, data


def machine_of(data):
    m = data.get("machine", {})
    return f"{m.get('nproc', '?')} cores, {m.get('cpu', '?')}, torch {m.get('torch', '?')}"


def load_of(data):
    """The run's load average as its JSON recorded it at the end (bench scripts before it: "")."""
    load = data.get("machine", {}).get("loadavg")
    return f"load average {load[0]:.1f} (1 min), {load[1]:.1f} (5 min)" if load else ""


def compare_panels(kind, data):
    """[(title, {system: steady samples/s}, notes {system: text}, footer)] of a compare_* JSON."""
    items = data["pipelines"].items() if "pipelines" in data else [(data["pipeline"], data)]
    return [(f"{pipe}\n{COMPARE[kind]}", {name: r["steady_samples_per_s"] for name, r in rep["results"].items()},
             {"batchd": f"{rep['ratio_steady']:.1f}x"}, load_of(data)) for pipe, rep in items]


def python_panels(data):
    panels = []
    for pipe, r in data["pipelines"].items():
        note = f"{r['ratio_python_cpp']:.2f} of C++"
        if "ratio_python_cpp_min" in r:
            note += f"\n({r['ratio_python_cpp_min']:.2f}-{r['ratio_python_cpp_max']:.2f})"
        panels.append((pipe, {s: r[s] for s in PYTHON_SYSTEMS if s in r}, {"batchd.Loader": note}, load_of(data)))
    return panels


def peers_panels(data):
    panels = []
    for recipe, rep in data["recipes"].items():
        ran = {s: r for s, r in rep["results"].items() if "error" not in r}
        failed = [s for s in rep["results"] if s not in ran]
        footer = load_of(data) + (f"\ndid not run: {', '.join(failed)}" if failed else "")
        panels.append((f"{recipe}\n{data['images']} photos", {s: r["steady_samples_per_s"] for s, r in ran.items()},
                       {s: f"{r['ratio_dataloader']:.1f}x" for s, r in ran.items() if s != "dataloader"}, footer))
    return panels


def draw_bars(path, panels, title):
    """One bar panel per (title, {system: value}, {system: note}, footer); a note is printed on its system's bar."""
    width = 0.8 + 1.2 * max(len(p[1]) for p in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), 4.6), squeeze=False)
    for ax, (name, systems, notes, footer) in zip(axes[0], panels):
        labels = [LABELS.get(s, s).replace(" (", "\n(") for s in systems]
        bars = ax.bar(labels, list(systems.values()), color=[f"C{i}" for i in range(len(systems))])
        for bar, (system, value) in zip(bars, systems.items()):
            top = (bar.get_x() + bar.get_width() / 2, bar.get_height())
            ax.annotate(f"{value:,.0f}", top, xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                        fontsize=8)
            if system in notes:
                ax.annotate(notes[system], top, xytext=(0, 13), textcoords="offset points", ha="center",
                            va="bottom", fontweight="bold")
        ax.set_title(name, fontsize=10)
        ax.set_ylabel("samples/s (steady state)")
        ax.set_ylim(0, max(systems.values()) * 1.4)
        ax.tick_params(axis="x", labelsize=8)
        ax.set_xlabel(footer, fontsize=8)
        ax.yaxis.set_major_formatter(EngFormatter(sep=""))
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_scaling(path, data):
    workers, pipelines = data["workers"], data["pipelines"]
    fig, axes = plt.subplots(1, len(pipelines), figsize=(4.5 * len(pipelines), 3.8), squeeze=False)
    for ax, (pipe, systems) in zip(axes[0], pipelines.items()):
        for system, values in systems.items():
            ax.plot(workers, values, marker="o", linestyle="-" if system == "batchd" else "--", label=system)
        ax.set_title(pipe)
        ax.set_xlabel("workers (W)")
        ax.set_ylabel("samples/s (steady state)")
        if len(systems.get("batchd", [])) == len(workers) and len(systems.get("torch.DataLoader", [])) == len(workers):
            for w, b, d in zip(workers, systems["batchd"], systems["torch.DataLoader"]):
                ax.annotate(f"{b / d:.1f}x", (w, b), xytext=(0, 6), textcoords="offset points", ha="center",
                            fontsize=8, fontweight="bold")
        ax.set_yscale("log")  # fmnist and the JPEG pipelines differ by three orders of magnitude
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(EngFormatter(sep=""))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.margins(y=0.15)
        ax.set_xticks(workers)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    load = load_of(data)
    fig.suptitle(f"one stream vs DataLoader(num_workers=W), batchd/DataLoader printed; {machine_of(data)}"
                 + (f"\n{load} at the end" if load else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return list(pipelines)


def plan(inputs):
    """{png name: (kind, [(source path, data)])} for the inputs that exist; PlotError as load()."""
    charts = {}
    for path in inputs:
        loaded = load(path)
        if loaded is None:
            print(f"skipped: {path} (no such file)", file=sys.stderr)
            continue
        kind, data = loaded
        nproc = data.get("machine", {}).get("nproc", "unknown")
        group = "batchd-vs-dataloader" if kind in COMPARE else {"scaling": "scaling", "compare_peers": "peers",
                                                                 "compare_python": "python-vs-cpp"}[kind]
        name = f"{group}-{nproc}core.png"
        entry = charts.setdefault(name, (group, []))
        if entry[1] and group != "batchd-vs-dataloader":
            raise PlotError(f"{path} and {entry[1][0][0]} would both draw {name}; pass one of them")
        entry[1].append((path, kind, data))
    return charts


def draw(out_dir, name, group, sources):
    """Draws one chart; returns its panel names. PlotError names the source that lacks a field."""
    path = os.path.join(out_dir, name)
    panels, seen = [], {}
    for source, kind, data in sources:
        try:
            if group == "scaling":
                return draw_scaling(path, data)
            new = (compare_panels(kind, data) if kind in COMPARE
                   else peers_panels(data) if kind == "compare_peers" else python_panels(data))
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise PlotError(f"{source}: a {kind} JSON without the field {e} (or with a wrong type there); write "
                            f"it again with bench/{kind}.py --json")
        for panel in new:
            if panel[0] in seen:
                raise PlotError(f"{source} and {seen[panel[0]]} both have the panel {panel[0]!r}; pass one of them")
            seen[panel[0]] = source
        panels += new
    title = {"batchd-vs-dataloader": "batchd vs its peer, same run",
             "peers": "batchd beside the loaders people pick instead (x DataLoader printed), same run",
             }.get(group, "Python loop (batchd.Loader) vs C++ loop (batchd-bench)")
    draw_bars(path, panels, f"{title}\n{machine_of(sources[0][2])}")
    return [p[0].replace("\n", " ") for p in panels]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+", help="JSON files the bench scripts wrote (absent ones are skipped)")
    ap.add_argument("--out", default=".", help="directory for the PNGs (made if missing)")
    args = ap.parse_args()
    try:
        charts = plan(args.json)
        if not charts:
            raise PlotError(f"nothing to draw: none of {', '.join(args.json)} exists")
        os.makedirs(args.out, exist_ok=True)
        for name, (group, sources) in sorted(charts.items()):
            panels = draw(args.out, name, group, sources)
            print(f"written: {os.path.join(args.out, name)}: {', '.join(panels)}")
    except PlotError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
