"""The Python the benchmarks run their PyTorch peer and trainers with: the project venv's (.venv/bin/python, made by
./setup.sh --tests from tests/requirements.txt: the torch, torchvision and numpy the tests run on), else the Python
running the benchmark. Every bench/compare_*.py takes --python PATH to use another (a host's own torch)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
DEFAULT_PYTHON = VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable
NEEDS = "./setup.sh --tests makes the project venv (.venv/) with torch, torchvision and numpy from PyPI"
