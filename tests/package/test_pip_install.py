"""`pip install --no-build-isolation <repo>` into a fresh venv that sees the project venv's packages (torch, numpy,
pybind11, setuptools: a .pth file naming the project venv's site-packages), used from a directory outside the source
tree: `python -m batchd` against a real daemon, against none, against one that
does not answer and as a user who may not connect; a Loader epoch over Fashion-MNIST. The source tree is left as it
was: no setuptools output in the CMake tree build/, no egg-info (the pip build's own tree is build-pip/).

Slow: pip builds the _batchd extension with CMake (about a minute on 2 cores without ccache).
BATCHD_BIN: the daemon (as for tests/python). The venv is made from the Python that runs pytest (the project venv's,
./setup.sh --tests), whose site-packages it reads; nothing is downloaded (--no-index).
"""
import glob
import importlib.util
import os
import re
import signal
import site
import socket
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = sys.executable

# The daemon starter of the Python tests (tests/python/conftest.py), loaded under a name of its own.
_spec = importlib.util.spec_from_file_location("batchd_python_conftest",
                                               os.path.join(ROOT, "tests", "python", "conftest.py"))
daemons = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(daemons)


def source_tree_state():
    """What a build could leave in the source tree, but for build-pip/ (the pip build's own, git-ignored) and
    __pycache__/ (other tests running meanwhile): git's status, ignored paths included; every file setuptools
    would put into the CMake tree build/ (build/lib.*, build/bdist.*, build/temp.*), with its mtime; egg-info."""
    git = []
    if os.path.exists(os.path.join(ROOT, ".git")):  # a checkout (not an unpacked tarball)
        git = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--ignored"], check=True,
                             capture_output=True, text=True).stdout.splitlines()
    git = [line for line in git if not re.search(r"(^!! build-pip/$|__pycache__/$)", line)]
    setuptools_out = {}
    for top in ("lib.*", "bdist.*", "temp.*"):
        for path in glob.glob(os.path.join(ROOT, "build", top, "**"), recursive=True):
            setuptools_out[path] = os.stat(path).st_mtime_ns
    egg_info = [p for p in glob.glob(os.path.join(ROOT, "**", "*.egg-info"), recursive=True)
                if not p.startswith(os.path.join(ROOT, "build-pip") + os.sep)]
    return {"git status": git, "setuptools output in build/": setuptools_out, "egg-info": egg_info}


class Venv:
    def __init__(self, root):
        self.root, self.python = root, os.path.join(root, "bin", "python")
        self.cwd = os.path.join(root, "elsewhere")  # outside the source tree: `import batchd` cannot find its source
        os.mkdir(self.cwd)

    def run(self, *args, env=None, **kw):
        full_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BATCHD_SOCKET")}
        full_env.update(env or {})
        return subprocess.run([self.python, *args], cwd=kw.pop("cwd", self.cwd), env=full_env, capture_output=True,
                              text=True, timeout=kw.pop("timeout", 300), **kw)


@pytest.fixture(scope="module")
def venv():
    with tempfile.TemporaryDirectory(prefix="batchd-pip-") as tmp:
        os.chmod(tmp, 0o755)  # the permission test runs the venv's python as another user
        before = source_tree_state()
        subprocess.run([PYTHON, "-m", "venv", os.path.join(tmp, "venv")], check=True)
        v = Venv(os.path.join(tmp, "venv"))
        # The project venv's torch, numpy, pybind11 and setuptools, seen by the new venv (as --system-site-packages
        # would show the base Python's): a .pth line per site-packages directory of the Python running this test.
        target = subprocess.run([v.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                check=True, capture_output=True, text=True).stdout.strip()
        with open(os.path.join(target, "batchd-test-project-venv.pth"), "w") as f:
            f.write("\n".join(site.getsitepackages()) + "\n")
        # The new venv's own setuptools (ensurepip's) would shadow the project venv's, older than torch wants.
        subprocess.run([v.python, "-m", "pip", "uninstall", "-q", "-y", "setuptools"], check=True)
        # --no-index: nothing is downloaded (numpy and torch are the project venv's); --no-cache-dir: no wheel
        # left in ~/.cache.
        pip = subprocess.run([os.path.join(v.root, "bin", "pip"), "install", "--no-build-isolation", "--no-index",
                              "--no-cache-dir", "-v", ROOT], cwd=v.cwd, capture_output=True, text=True, timeout=1200)
        assert pip.returncode == 0, f"pip install failed:\n{pip.stdout[-8000:]}\n{pip.stderr[-8000:]}"
        v.pip_log = pip.stdout + pip.stderr  # the build's own output is on stderr
        v.tree_before, v.tree_after = before, source_tree_state()
        yield v


@pytest.fixture(scope="module")
def daemon():
    with tempfile.TemporaryDirectory(prefix="batchd-pip-daemon-") as tmp:
        yield from daemons._run_daemon(tmp)


def test_the_installed_package_is_imported_not_the_source(venv):
    out = venv.run("-c", "import batchd, batchd._batchd as m; print(batchd.__file__); print(m.__file__); "
                         "print(batchd.__version__); print(batchd.Loader, batchd.BatchdError)")
    assert out.returncode == 0, out.stderr
    init, module, version, _ = out.stdout.splitlines()
    site = os.path.realpath(venv.root) + os.sep
    assert os.path.realpath(init).startswith(site) and os.path.realpath(module).startswith(site)
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        assert version == re.search(r"project\(batchd VERSION ([0-9.]+)", f.read()).group(1)
    assert re.search(r"batchd: built (with its CUDA path|the host path only)", venv.pip_log), "pip -v says which"


def test_the_source_tree_is_left_as_it_was(venv):
    assert venv.tree_after == venv.tree_before
    assert not venv.tree_after["egg-info"]


def test_python_m_batchd_is_green_against_a_daemon(venv, daemon):
    out = venv.run("-m", "batchd", env={"BATCHD_SOCKET": daemon})
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"socket: {daemon} ($BATCHD_SOCKET)" in out.stdout
    assert re.search(r"daemon: batchd [0-9.]+, instance [0-9a-f]{16}, pid \d+", out.stdout), out.stdout
    assert re.search(r"^  fashion-mnist-test +ready$", out.stdout, re.M), out.stdout
    assert "OK:" in out.stdout
    assert venv.run("-m", "batchd", "--socket", daemon).returncode == 0
    help_text = venv.run("-m", "batchd", "--help")
    assert help_text.returncode == 0 and "--socket" in help_text.stdout


def test_python_m_batchd_fails_with_the_reason_without_a_daemon(venv):
    missing = os.path.join(venv.root, "no-daemon.sock")
    out = venv.run("-m", "batchd", env={"BATCHD_SOCKET": missing})
    assert out.returncode == 1
    assert f"FAILED: no socket at {missing}" in out.stderr and "fix: start the daemon" in out.stderr
    # A socket file that nothing listens on (a daemon that died without removing it).
    stale = os.path.join(venv.root, "stale.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(stale)
        out = venv.run("-m", "batchd", "--socket", stale)
    assert out.returncode == 1 and f"nothing listens on {stale}" in out.stderr, out.stderr


def test_python_m_batchd_fails_when_the_daemon_does_not_answer(venv):
    with tempfile.TemporaryDirectory(prefix="batchd-pip-stopped-") as tmp:
        runner = daemons._run_daemon(tmp)
        sock = next(runner)
        pid = _daemon_pid(venv, sock)
        os.kill(pid, signal.SIGSTOP)  # the kernel still accepts connections; nobody answers
        try:
            out = venv.run("-m", "batchd", "--socket", sock, "--timeout", "2")
        finally:
            os.kill(pid, signal.SIGCONT)
            runner.close()
    assert out.returncode == 1
    assert "accepted the connection but did not answer within 2 s" in out.stderr, out.stderr


def _daemon_pid(venv, sock):
    out = venv.run("-c", f"import batchd._batchd as m; print(m.status({sock!r})['daemon_pid'])")
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def test_python_m_batchd_says_permission_denied(venv, daemon):
    if os.getuid() != 0:
        pytest.skip("needs root, to run the check as another user (nobody)")
    out = venv.run("-m", "batchd", "--socket", daemon, user=65534, group=65534, cwd="/")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "permission denied: uid 65534" in out.stderr and "fix:" in out.stderr, out.stderr


def test_a_loader_epoch_over_fashion_mnist(venv, daemon):
    script = ("import batchd\n"
              f"loader = batchd.Loader('fashion-mnist', pipeline='fmnist', batch_size=500, socket={daemon!r}, as_dict=True)\n"
              "seen = []\n"
              "for batch in loader:\n"
              "    assert batch['image'].shape[1:] == (1, 28, 28) and batch['image'].dtype.is_floating_point\n"
              "    seen += batch['index'].tolist()\n"
              "assert sorted(seen) == list(range(60000)), len(seen)\n"
              "print(len(loader), 'batches', loader.rank, loader.world_size)\n")
    out = venv.run("-c", script)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["120", "batches", "0", "1"]


def test_the_package_carries_the_daemon_and_starts_it_as_a_private_daemon(venv):
    """pip's install has batchd/bin/batchd (setup.py), found first without $BATCHD_BIN; a private daemon started from
    it serves the idx dataset it declares, and is gone with its directory once the trainer exits."""
    script = ("import os, batchd, batchd._daemon.binary as b, batchd._daemon.private as p\n"
              "binary = b.daemon_binary()\n"
              "assert binary == os.path.join(os.path.dirname(batchd.__file__), 'bin', 'batchd'), binary\n"
              "d = p.private_daemon(workers=1)\n"
              "name = d.declare_idx('/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz',\n"
              "                     '/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz')\n"
              "stream = batchd._batchd.Client(d.socket).open_stream(dataset=name, pipeline='fmnist', batch_size=8)\n"
              "print(stream.next_arrays()[1]['image'].shape, d.directory)\n")
    out = venv.run("-c", script, env={"BATCHD_BIN": ""})
    assert out.returncode == 0, out.stderr
    shape, directory = out.stdout.rsplit(" ", 1)
    assert shape == "(8, 1, 28, 28)" and not os.path.exists(directory.strip())
