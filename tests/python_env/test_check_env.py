"""check_env.py, the ctest fixture python_env that every Python test needs: it passes on the project venv and fails,
naming the package and the minimum, when torch, torchvision or numpy is older than README.md's minimum or missing
(stand-in packages earlier on PYTHONPATH play the old versions)."""
import os
import subprocess
import sys

import pytest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_env.py")


def run(tmp_path, fakes):
    for name, version in fakes.items():
        os.makedirs(tmp_path / name, exist_ok=True)
        (tmp_path / name / "__init__.py").write_text(
            "raise ImportError('not installed')\n" if version is None else f"__version__ = {version!r}\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    return subprocess.run([sys.executable, CHECK], env=env, capture_output=True, text=True, timeout=120)


def test_the_project_venv_passes(tmp_path):
    out = run(tmp_path, {})
    assert out.returncode == 0, out.stderr
    assert "torch 2." in out.stdout and "numpy 2." in out.stdout


@pytest.mark.parametrize("fakes, words", [
    ({"torch": "1.13.1"}, "torch 1.13.1 is older than the minimum 2.6"),
    ({"torch": "2.5.1+cu121"}, "torch 2.5.1+cu121 is older than the minimum 2.6"),
    ({"numpy": "1.24.2"}, "numpy 1.24.2 is older than the minimum 2.0"),
    ({"torchvision": "0.14.1"}, "torchvision 0.14.1 is older than the minimum 0.21"),
    ({"moto": None}, "moto is not importable"),
])
def test_an_older_or_missing_package_fails_naming_it(tmp_path, fakes, words):
    out = run(tmp_path, fakes)
    assert out.returncode == 1
    assert words in out.stderr and "./setup.sh --tests" in out.stderr, out.stderr
