#!/usr/bin/env python3
"""PyTorch's own DataLoader tests, run against batchd.Loader (issue 40, item 7; tests/conformance/README.md).

    run_conformance.py [--test-file build/conformance/test_dataloader.py] [--out DIR] [--systems dataloader,batchd]
                       [--timeout 120] [--record] [-k EXPR]

Runs PyTorch's test/test_dataloader.py (fetch_pytorch_tests.sh) under pytest once per system, each a fresh pytest
process: `dataloader` as it is (the baseline: DataLoader itself, on the same torch and file), `batchd` with
torch.utils.data.DataLoader replaced by batchd.Loader before the module is imported (batchd_plugin.py). Every test
has --timeout seconds (pytest-timeout): a test that hangs fails, it does not stop the run.

Reported: the tests DataLoader passes, how many of those batchd.Loader passes (the conformance figure), and each
one it fails with the first line of its failure. Compared with the recorded lists beside this script:
  dataloader_passes.txt  the tests DataLoader passes on the pinned file and the venv's torch
  batchd_passes.txt      those of them batchd.Loader passes
A test in batchd_passes.txt that fails now is a regression: exit status 1, the test named. A test that passes now
and is not recorded is printed ("now passes"); --record rewrites the lists from this run. With --systems batchd alone
(ctest's conformance test), dataloader_passes.txt stands for the baseline.
"""
import argparse
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECORDED = {"dataloader": os.path.join(HERE, "dataloader_passes.txt"),
            "batchd": os.path.join(HERE, "batchd_passes.txt")}


def run_pytest(system, args):
    """{test id: (outcome, first line of its failure)} of one pytest run of the file."""
    xml = os.path.join(args.out, f"{system}.xml")
    if os.path.exists(xml):
        os.remove(xml)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p))
    env.pop("BATCHD_CONFORMANCE", None)
    loaders = os.path.join(args.out, f"{system}.loaders")
    env["BATCHD_CONFORMANCE_LOADERS"] = loaders
    if system == "batchd":
        env["BATCHD_CONFORMANCE"] = "batchd"
    command = [sys.executable, "-m", "pytest", args.test_file, "-p", "batchd_plugin", "-p", "no:cacheprovider",
               "-q", "-rN", f"--timeout={args.timeout}", f"--junitxml={xml}", "-o", "junit_family=xunit1"]
    if args.k:
        command += ["-k", args.k]
    log = os.path.join(args.out, f"{system}.log")
    t0 = time.monotonic()
    with open(log, "w") as f:
        rc = subprocess.call(command, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=os.path.dirname(args.test_file))
    seconds = time.monotonic() - t0
    if not os.path.exists(xml) or rc not in (0, 1):  # 1: some tests failed; 2-5: interrupted, a collection error, ...
        sys.exit(f"run_conformance.py: pytest ({system}) exited with {rc} (not a completed run): see {log}")
    print(f"{system}: pytest exited with {rc} after {seconds:.0f} s (log: {log})")
    with open(loaders) as f:  # node ids (file::Class::test) as Class::test, the report's names
        built = {line.strip().split("::", 1)[1] for line in f if "::" in line}
    return outcomes(xml), built


def outcomes(xml):
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        outcome, why = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                why = (node.get("message") or node.text or "").strip().splitlines()
                why = why[0][:200] if why else ""
                break
        if outcome == "passed" or name not in out:  # a setup error and the call's outcome: keep the worst
            out.setdefault(name, (outcome, why))
        elif outcome == "failed":
            out[name] = (outcome, why)
    return out


def read_list(path):
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def write_list(path, names, what):
    with open(path, "w") as f:
        f.write(f"# {what}: written by tests/conformance/run_conformance.py --record; one test a line.\n")
        f.writelines(f"{n}\n" for n in sorted(names))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--test-file", default=os.path.join(ROOT, "build", "conformance", "test_dataloader.py"))
    ap.add_argument("--out", default=None, help="where the logs and JUnit reports go (default: beside the file)")
    ap.add_argument("--systems", default="dataloader,batchd")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per test (pytest-timeout)")
    ap.add_argument("--record", action="store_true", help="rewrite dataloader_passes.txt and batchd_passes.txt")
    ap.add_argument("-k", default=None, help="pytest's -k, to run some tests only (no --record with it)")
    args = ap.parse_args()
    if not os.path.exists(args.test_file):
        sys.exit(f"run_conformance.py: {args.test_file} is missing: run tests/conformance/fetch_pytorch_tests.sh "
                 "(./setup.sh --tests does)")
    args.test_file = os.path.abspath(args.test_file)
    args.out = os.path.abspath(args.out or os.path.dirname(args.test_file))
    os.makedirs(args.out, exist_ok=True)
    systems = args.systems.split(",")
    if "batchd" not in systems or not set(systems) <= {"dataloader", "batchd"}:
        sys.exit("run_conformance.py: --systems is batchd or dataloader,batchd")
    if args.record and (args.k or systems != ["dataloader", "batchd"]):
        sys.exit("run_conformance.py: --record needs the whole file on both systems (no -k, no --systems)")
    runs = {s: run_pytest(s, args) for s in systems}

    if "dataloader" in runs:
        baseline = {n for n, (o, _) in runs["dataloader"][0].items() if o == "passed"}
    elif args.k:  # some tests only: the recorded ones that ran
        baseline = read_list(RECORDED["dataloader"]) & set(runs["batchd"][0])
    else:  # the whole file: a recorded test missing from the report counts as failed
        baseline = read_list(RECORDED["dataloader"])
    batchd, built = runs["batchd"][0], set.union(*(b for _, b in runs.values()))
    passed = {n for n in baseline if batchd.get(n, ("missing",))[0] == "passed"}
    failed = sorted(baseline - passed)
    with_loader = baseline & built
    print(f"\nDataLoader passes {len(baseline)} tests; batchd.Loader passes {len(passed)} of them "
          f"({100 * len(passed) / max(1, len(baseline)):.1f}%), fails {len(failed)}.")
    print(f"Of the {len(with_loader)} of them that build a loader in the test process, batchd.Loader passes "
          f"{len(passed & with_loader)} ({100 * len(passed & with_loader) / max(1, len(with_loader)):.1f}%).")
    print("Failed with batchd.Loader:")
    for n in failed:
        outcome, why = batchd.get(n, ("missing", "not run"))
        print(f"  {n}: {outcome}: {why}")

    recorded = read_list(RECORDED["batchd"])
    regressions = sorted(n for n in recorded & baseline if n not in passed)
    new = sorted(passed - recorded)
    if new and not args.record:
        print(f"\nnow passes, not recorded in batchd_passes.txt ({len(new)}; --record to add): " + ", ".join(new))
    if args.record:
        write_list(RECORDED["dataloader"], baseline, "tests of PyTorch 2.6.0's test_dataloader.py that DataLoader "
                                                     "passes on the venv's torch")
        write_list(RECORDED["batchd"], passed, "those of them batchd.Loader passes")
        print(f"recorded {len(baseline)} and {len(passed)} tests")
    if regressions:
        print(f"\nREGRESSION: {len(regressions)} test(s) recorded as passing with batchd.Loader now fail: "
              + ", ".join(regressions))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
