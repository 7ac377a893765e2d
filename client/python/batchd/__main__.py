"""python -m batchd — checks a batchd installation from the trainer's side.

Prints the client's version and where it is installed, finds the daemon's socket (--socket, else $BATCHD_SOCKET,
else /run/batchd/batchd.sock), asks the daemon for its status and lists the datasets it serves with their state.
Exit status: 0 when a daemon answered; 1 with the reason and the fix on stderr when none did (no socket, permission
denied, nothing listening, no answer within --timeout); 2 for bad arguments.
"""
import argparse
import os
import stat
import sys
import threading

from . import BatchdError, __version__, _batchd

START_DAEMON = ("start the daemon: `sudo systemctl start batchd` (the installed service; its socket is "
                "/run/batchd/batchd.sock), or by hand from a CMake build: `build/bin/batchd --socket "
                "/tmp/batchd.sock`, then `export BATCHD_SOCKET=/tmp/batchd.sock` (or pass --socket)")
JOIN_GROUP = ("connect as a member of the socket's group (`sudo usermod -aG batchd $USER`, then log in again; "
              "daemon.socket_group in docs/operations.md), or point BATCHD_SOCKET at a daemon you may use")


class Failure(Exception):
    """No daemon answered: why, and what to do about it."""

    def __init__(self, reason, fix):
        super().__init__(reason)
        self.reason, self.fix = reason, fix


def find_socket(given):
    """(path, where it came from)."""
    if given:
        return given, "--socket"
    if os.environ.get("BATCHD_SOCKET"):
        return _batchd.default_socket_path(), "$BATCHD_SOCKET"
    return _batchd.default_socket_path(), "the default; $BATCHD_SOCKET is not set"


def check_socket_file(path):
    """Raises Failure when `path` is not a socket this user can connect to."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise Failure(f"no socket at {path}: no batchd daemon is running there", START_DAEMON) from None
    except PermissionError:
        raise Failure(f"permission denied: uid {os.getuid()} cannot reach {path} (its directory is closed to "
                      "this user)", JOIN_GROUP) from None
    if not stat.S_ISSOCK(st.st_mode):
        raise Failure(f"{path} exists but is not a socket", "point --socket or BATCHD_SOCKET at the daemon's socket")
    if not os.access(path, os.R_OK | os.W_OK):
        raise Failure(f"permission denied: uid {os.getuid()} may not connect to {path} (mode "
                      f"{stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid} gid {st.st_gid})", JOIN_GROUP)


def ask_daemon(path, timeout):
    """The daemon's status dict; Failure if it cannot be reached or does not answer within `timeout` seconds."""
    result = {}

    def call():
        try:
            result["status"] = _batchd.status(path)
        except BatchdError as e:
            result["error"] = e

    # A daemon that accepts connections but never answers (stopped, hung) would block the call forever: it runs on a
    # daemon thread, which the interpreter abandons at exit.
    thread = threading.Thread(target=call, name="batchd-status", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise Failure(f"the daemon at {path} accepted the connection but did not answer within {timeout:g} s "
                      "(stopped, or stuck?)",
                      "look at it: `systemctl status batchd`, `journalctl -u batchd`, `batchctl status`; restart "
                      "it if it stays silent (`sudo systemctl restart batchd`)")
    if "error" in result:
        e = result["error"]
        if "no batchd is listening" in str(e):
            raise Failure(f"nothing listens on {path} (connection refused): the socket file is left from a daemon "
                          "that is no longer running", START_DAEMON)
        if e.code in ("I/O error", "permission denied") and "permission denied" in str(e).lower():
            raise Failure(str(e), JOIN_GROUP)
        raise Failure(f"the daemon at {path} did not answer: {e}",
                      "look at `journalctl -u batchd` (or the daemon's terminal) for why")
    return result["status"]


def dataset_lines(datasets):
    """'name  state' lines of the daemon's dataset descriptions ("name" or "name (detail)")."""
    rows = []
    for d in datasets:
        name, _, detail = d.partition(" (")
        detail = detail[:-1] if detail.endswith(")") else detail
        if detail.startswith("unavailable: "):
            state = "UNAVAILABLE: " + detail[len("unavailable: "):]
        elif detail.startswith("indexing"):
            state = detail + " (streams wait for it)"
        else:
            state = "ready" + (f" ({detail})" if detail else "")
        rows.append((name, state))
    width = max((len(name) for name, _ in rows), default=0)
    return [f"  {name:<{width}}  {state}" for name, state in rows]


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m batchd",
        description="Check the batchd Python client and the daemon it would use: version, socket, daemon, datasets.")
    parser.add_argument("--socket", default="",
                        help="the daemon's socket (default: $BATCHD_SOCKET, else /run/batchd/batchd.sock)")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds to wait for the daemon's answer (default: 10)")
    args = parser.parse_args(argv)

    import torch
    cuda = "built" if _batchd.has_cuda else f"not built: {_batchd.cuda_unavailable_reason}"
    print(f"batchd {__version__} (Python client in {os.path.dirname(os.path.abspath(__file__))})")
    print(f"  torch {torch.__version__}; batchd's CUDA path: {cuda}; "
          f"torch sees {torch.cuda.device_count() if torch.cuda.is_available() else 0} GPU(s)")
    path, source = find_socket(args.socket)
    print(f"socket: {path} ({source})")
    try:
        check_socket_file(path)
        status = ask_daemon(path, args.timeout)
    except Failure as f:
        print(f"batchd: FAILED: {f.reason}", file=sys.stderr)
        print(f"  fix: {f.fix}", file=sys.stderr)
        return 1
    print(f"daemon: batchd {status['version']}, instance {status['instance_id']}, pid {status['daemon_pid']}, "
          f"up {status['uptime_seconds']:.0f} s, {status['workers']} workers, {status['streams']} streams"
          + (", DRAINING (new streams are refused)" if status["draining"] else ""))
    if status["version"] != __version__:
        print(f"  note: the daemon is version {status['version']}, this client {__version__}")
    print(f"datasets ({len(status['datasets'])}):")
    for line in dataset_lines(status["datasets"]) or ["  none declared: add [datasets.<name>] tables to its config"]:
        print(line)
    print(f"OK: batchd.Loader(..., socket={path!r}) can reach this daemon"
          if source == "--socket" else "OK: batchd.Loader can reach this daemon")
    return 0


if __name__ == "__main__":
    sys.exit(main())
