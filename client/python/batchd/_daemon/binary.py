"""Where batchd.Loader finds the daemon binary it starts as a private daemon (private.py).

daemon_binary() tries, in this order, and returns the first executable file:
  1. $BATCHD_BIN, if set (the variable the tools and tests already use): it must name an executable file, else
     BatchdError naming it — a variable that points nowhere is a mistake, never skipped silently;
  2. the copy the package carries: <package>/bin/batchd (`pip install` builds the daemon with the extension and puts
     it there, see setup.py);
  3. the CMake build tree's: <build>/bin/batchd when the package is imported from <build>/python
     (PYTHONPATH=build/python);
  4. `batchd` on $PATH, then /usr/sbin/batchd, /usr/local/sbin/batchd, /usr/bin/batchd (Debian's package and
     `cmake --install` put it in sbin, which a user's PATH often lacks).
None of them: BatchdError listing where it looked and the fixes (install the daemon, point BATCHD_BIN at one, or use
a running daemon with socket= / $BATCHD_SOCKET).
"""
import os
import shutil

from .._batchd import BatchdError

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # batchd/, this file being batchd/_daemon/
SYSTEM_PATHS = ("/usr/sbin/batchd", "/usr/local/sbin/batchd", "/usr/bin/batchd")


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def candidates():
    """[(path or None, where it comes from)] in lookup order, $BATCHD_BIN excepted."""
    package = os.path.join(_PACKAGE, "bin", "batchd")
    build_tree = os.path.join(os.path.dirname(os.path.dirname(_PACKAGE)), "bin", "batchd")
    return ([(package, "the pip-installed package's copy"), (build_tree, "the CMake build tree's")]
            + [(shutil.which("batchd"), "batchd on $PATH")]
            + [(path, path) for path in SYSTEM_PATHS])


def daemon_binary():
    """The batchd binary to start (see the module docstring); BatchdError if there is none."""
    env = os.environ.get("BATCHD_BIN")
    if env:
        if _executable(env):
            return env
        raise BatchdError(f"$BATCHD_BIN is {env!r}, which is not an executable file: point it at a batchd daemon "
                          "binary (build/bin/batchd of a CMake build, /usr/sbin/batchd of the Debian package), or "
                          "unset it to search the usual places")
    tried = []
    for path, where in candidates():
        if path and _executable(path):
            return path
        tried.append(f"{path} ({where})" if path and path != where else where)
    raise BatchdError("no daemon answers and no batchd binary was found to start a private one; looked at: "
                      + "; ".join(["$BATCHD_BIN (unset)"] + tried)
                      + ". Fix: install the daemon (the Debian package batchd; `pip install` of the batchd source "
                      "builds it into the package; or ./setup.sh && cmake --build build --target batchd), or set "
                      "BATCHD_BIN=/path/to/batchd, or use a running daemon with socket= or $BATCHD_SOCKET")
