"""bench/plot.py against the benchmark JSON recorded in bench/results/: every chart drawn as a real PNG, an absent
input skipped, and a malformed or incomplete JSON refused with a message naming the file."""
import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import pytest  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOT = os.path.join(ROOT, "bench", "plot.py")
RESULTS = os.path.join(ROOT, "bench", "results")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RECORDED = ["compare_fmnist", "compare_imagefolder", "compare_webdataset", "compare_tokens", "compare_recipes",
            "compare_python", "scaling", "compare_peers"]
# The charts the recorded JSON makes, each with its panels, as plot.py names them on its "written:" lines.
EXPECTED = {
    "batchd-vs-dataloader-2core.png": ["fmnist Fashion-MNIST", "train224 ImageFolder JPEGs",
                                       "val224 ImageFolder JPEGs", "train224 WebDataset shards", "lm token file",
                                       "new_train recipe (ImageFolder JPEGs)", "new_eval recipe (ImageFolder JPEGs)",
                                       "timm_train recipe (ImageFolder JPEGs)"],
    "python-vs-cpp-2core.png": ["fmnist", "train224"],
    "scaling-2core.png": ["fmnist", "train224", "val224"],
    "peers-2core.png": ["train 2000 photos", "eval 2000 photos"],
}


def recorded(name):
    return os.path.join(RESULTS, f"{name}-2core.json")


def plot(out_dir, *inputs):
    return subprocess.run([sys.executable, PLOT, "--out", str(out_dir), *map(str, inputs)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)


def written(run):
    """{png file name: [panel, ...]} from plot.py's "written: PATH: panel, panel" lines."""
    charts = {}
    for line in run.stdout.splitlines():
        assert line.startswith("written: "), line
        path, panels = line[len("written: "):].split(": ", 1)
        charts[os.path.basename(path)] = panels.split(", ")
    return charts


def assert_png(path):
    with open(path, "rb") as f:
        assert f.read(8) == PNG_MAGIC, f"{path} is not a PNG"
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] >= 300 and image.shape[1] >= 300 and image.shape[2] in (3, 4), \
        f"{path}: {image.shape}"
    assert image[..., :3].std() > 0.01, f"{path} is blank"


def test_draws_every_chart_from_the_recorded_json(tmp_path):
    run = plot(tmp_path, *(recorded(n) for n in RECORDED))
    assert run.returncode == 0, run.stderr
    assert written(run) == EXPECTED
    assert sorted(os.listdir(tmp_path)) == sorted(EXPECTED)
    for name in EXPECTED:
        assert_png(tmp_path / name)


def test_a_scaling_json_from_before_the_benchmark_field_still_draws(tmp_path):
    with open(recorded("scaling")) as f:
        data = json.load(f)
    del data["benchmark"]
    old = tmp_path / "old-scaling.json"
    old.write_text(json.dumps(data))
    run = plot(tmp_path / "out", old)
    assert run.returncode == 0, run.stderr
    assert written(run) == {"scaling-2core.png": EXPECTED["scaling-2core.png"]}
    assert_png(tmp_path / "out" / "scaling-2core.png")


def test_an_absent_input_is_skipped(tmp_path):
    missing = tmp_path / "compare_tokens-16core.json"
    run = plot(tmp_path / "out", missing, recorded("compare_fmnist"))
    assert run.returncode == 0, run.stderr
    assert f"skipped: {missing} (no such file)" in run.stderr
    assert written(run) == {"batchd-vs-dataloader-2core.png": ["fmnist Fashion-MNIST"]}
    assert_png(tmp_path / "out" / "batchd-vs-dataloader-2core.png")

    run = plot(tmp_path / "out2", missing)
    assert run.returncode == 1
    assert "nothing to draw" in run.stderr and str(missing) in run.stderr


@pytest.mark.parametrize("content, message", [
    ("{\"benchmark\": \"compare_fmnist\", \"results\": ", "not valid JSON"),
    ("[1, 2]", "holds a JSON list"),
    ("{\"benchmark\": \"compare_cuda\"}", "unknown \"benchmark\": 'compare_cuda'"),
    ("{\"benchmark\": \"compare_fmnist\", \"pipeline\": \"fmnist\", \"machine\": {\"nproc\": 2}}",
     "a compare_fmnist JSON without the field 'results'"),
])
def test_a_malformed_json_is_refused_naming_the_file(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    run = plot(tmp_path / "out", recorded("compare_tokens"), bad)
    assert run.returncode == 1
    assert f"plot.py: {bad}: " in run.stderr and message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
