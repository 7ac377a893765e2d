"""The Python tests' environment: fails (and with it every test that needs the ctest fixture python_env) when the
Python that runs them lacks what they test against, or has it older than README.md's minimum.

Minimums (README.md, "Python"): torch 2.6 (DataLoader's in_order= is 2.6's), torchvision 0.21 (torch 2.6's), numpy 2.0,
Pillow, pytest, moto (the S3 test server), scikit-image (the test photographs). Prints the versions found.
"""
import importlib
import re
import sys

MINIMUM = {"torch": (2, 6), "torchvision": (0, 21), "numpy": (2, 0)}
NEEDED = ["PIL", "pytest", "moto", "skimage", "matplotlib", "yaml", "kubernetes", "boto3", "pybind11"]


def version_tuple(text):
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:2])


def main():
    problems = []
    for name, least in MINIMUM.items():
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 (torch on an old numpy fails with other errors than ImportError)
            problems.append(f"{name} is not importable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
            continue
        print(f"{name} {mod.__version__}")
        if version_tuple(mod.__version__) < least:
            problems.append(f"{name} {mod.__version__} is older than the minimum {'.'.join(map(str, least))}")
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001
            problems.append(f"{name} is not importable ({type(e).__name__}: {e})")
    print(f"python {sys.version.split()[0]} at {sys.executable}")
    if problems:
        for p in problems:
            print(f"check_env: {p}", file=sys.stderr)
        print("check_env: ./setup.sh --tests installs tests/requirements.txt into the project venv (.venv/)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
