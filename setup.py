"""setup.py — `pip install --no-build-isolation .`: builds the _batchd extension with the project's own CMake and
installs the `batchd` package (client/python/batchd). pyproject.toml declares the package; this file adds what
needs code: the version and the CMake build.

- Version: CMakeLists.txt's `project(batchd VERSION x.y.z)`, the one source (the module's __version__ too).
- Build tree: build-pip/ (git-ignored), never the CMake tree build/: build-pip/cmake is the CMake build (tests off,
  only the target _batchd and what it links), build-pip/setuptools setuptools' build_base, build-pip/ the
  egg-info. `rm -rf build-pip` forgets it; a second `pip install .` rebuilds only what changed.
- CUDA: as the CMake build: batchd's CUDA path when the toolkit is found, else the host path (BATCHD_WITH_CUDA=
  AUTO|ON|OFF in the environment chooses, as -DBATCHD_WITH_CUDA does). The build log says which
  (`pip install -v`), and so does `python -m batchd`.
- The daemon: the package carries the batchd binary as batchd/bin/batchd (built here from the same tree), which
  batchd.Loader starts as a private daemon when no daemon answers (batchd/_daemon/binary.py: after $BATCHD_BIN, the
  first place it looks). BATCHD_WITH_DAEMON=OFF leaves it out (a host whose daemon is installed separately).
- Environment: ccache is the compiler launcher when it is on PATH; CMAKE_BUILD_PARALLEL_LEVEL (else all cores);
  CMAKE_BUILD_TYPE (default Release); CMAKE_ARGS (more -D options, shell-quoted).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(ROOT, "build-pip")
CMAKE_BUILD = os.path.join(BUILD, "cmake")
SETUP_NEEDS = "./setup.sh installs what the build needs from Debian"


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        found = re.search(r"project\(\s*batchd\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not found:
        sys.exit("setup.py: no `project(batchd VERSION x.y.z)` in CMakeLists.txt")
    return found.group(1)


class CMakeBuild(build_ext):
    """Builds every extension by its CMake target (the extension's last name: batchd._batchd -> _batchd)."""

    def run(self):
        if shutil.which("cmake") is None:
            sys.exit(f"setup.py: cmake is not on PATH ({SETUP_NEEDS}: apt-get install cmake)")
        cuda = self.configure()
        super().run()
        self.announce_line("batchd: built with its CUDA path (the CUDA toolkit was found)" if cuda else
                           "batchd: built the host path only (no CUDA toolkit, or BATCHD_WITH_CUDA=OFF)")

    def configure(self):
        """Configures build-pip/cmake; True when it has the CUDA path."""
        args = [f"-DCMAKE_BUILD_TYPE={os.environ.get('CMAKE_BUILD_TYPE') or 'Release'}",
                "-DBATCHD_BUILD_TESTS=OFF",
                f"-DBATCHD_WITH_CUDA={os.environ.get('BATCHD_WITH_CUDA') or 'AUTO'}",
                f"-DPython_EXECUTABLE={sys.executable}"]  # the module is built for the Python that runs pip
        if shutil.which("ccache"):
            args += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        args += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        output = self.run_cmake(["-S", ROOT, "-B", CMAKE_BUILD, *args], "configuring")
        off = re.search(r"batchd: Python module: OFF \((.*)\)", output)  # cmake/BatchdPython.cmake's status line
        if off:
            sys.exit(f"setup.py: CMake cannot build the module: {off.group(1)}")
        return re.search(r"batchd: CUDA client path: ON", output) is not None  # CMakeLists.txt's status line

    def build_extension(self, ext):
        target = ext.name.rsplit(".", 1)[-1]
        jobs = [] if os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") else ["-j", str(self.jobs())]
        self.run_cmake(["--build", CMAKE_BUILD, "--target", target, *jobs], f"building {target}")
        # client/python/CMakeLists.txt puts the module into <build>/python/batchd, named for this Python.
        built = os.path.join(CMAKE_BUILD, "python", *ext.name.split(".")[:-1],
                             os.path.basename(self.get_ext_filename(ext.name)))
        if not os.path.isfile(built):
            sys.exit(f"setup.py: CMake built no {built} for {sys.executable}; see the build output above")
        dest = self.get_ext_fullpath(ext.name)
        self.mkpath(os.path.dirname(dest))
        self.copy_file(built, dest)
        if (os.environ.get("BATCHD_WITH_DAEMON") or "ON").upper() not in ("OFF", "0", "NO", "FALSE"):
            self.build_daemon(os.path.dirname(dest), jobs)

    def build_daemon(self, package_dir, jobs):
        """Builds the daemon and puts it into the package as bin/batchd (executable; the wheel keeps the mode)."""
        self.run_cmake(["--build", CMAKE_BUILD, "--target", "batchd", *jobs], "building the daemon batchd")
        built = os.path.join(CMAKE_BUILD, "bin", "batchd")  # CMAKE_RUNTIME_OUTPUT_DIRECTORY
        if not os.path.isfile(built):
            sys.exit(f"setup.py: CMake built no {built}; see the build output above (BATCHD_WITH_DAEMON=OFF "
                     "leaves the daemon out)")
        dest = os.path.join(package_dir, "bin", "batchd")
        self.mkpath(os.path.dirname(dest))
        self.copy_file(built, dest)

    def jobs(self):
        if self.parallel and self.parallel is not True:
            return int(self.parallel)
        return os.cpu_count() or 1

    def run_cmake(self, args, what):
        """Runs cmake, echoing its output; exits naming the step when it fails. Returns the output."""
        self.announce_line(f"batchd: {what}: cmake {shlex.join(args)}")
        output = []
        with subprocess.Popen(["cmake", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            for line in proc.stdout:
                sys.stdout.write(line)
                output.append(line)
        if proc.returncode != 0:
            sys.exit(f"setup.py: {what} failed (cmake exited with {proc.returncode}; output above). "
                     f"{SETUP_NEEDS}; the CMake build is in {CMAKE_BUILD}")
        return "".join(output)

    @staticmethod
    def announce_line(line):
        print(line, flush=True)


os.makedirs(BUILD, exist_ok=True)  # egg_base must exist
setup(
    version=version(),
    ext_modules=[Extension("batchd._batchd", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join(BUILD, "setuptools")}, "egg_info": {"egg_base": BUILD}},
)
