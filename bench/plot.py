#!/usr/bin/python3
"""Draws bench/scaling.py's JSON as a PNG: steady-state samples/s against workers, batchd vs DataLoader.

    bench/plot.py build/scaling.json docs/scaling.png [--title TEXT]

One panel per pipeline (log-scale y, since fmnist and the JPEG pipelines differ by three orders of magnitude),
batchd solid, DataLoader dashed. Needs Debian's python3-matplotlib (./setup.sh installs it).
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scaling_json")
    ap.add_argument("png")
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    with open(args.scaling_json) as f:
        data = json.load(f)
    workers = data["workers"]
    pipelines = data["pipelines"]
    fig, axes = plt.subplots(1, len(pipelines), figsize=(4.5 * len(pipelines), 3.8), squeeze=False)
    for ax, (pipe, systems) in zip(axes[0], pipelines.items()):
        for system, values in systems.items():
            ax.plot(workers, values, marker="o", linestyle="-" if system == "batchd" else "--", label=system)
        ax.set_title(pipe)
        ax.set_xlabel("workers (W)")
        ax.set_ylabel("samples/s (steady state)")
        ax.set_yscale("log")
        ax.set_xticks(workers)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    machine = data.get("machine", {})
    fig.suptitle(args.title or f"one stream vs DataLoader(num_workers=W): {machine.get('nproc', '?')} cores, "
                                f"{machine.get('cpu', '?')}")
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"written: {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
