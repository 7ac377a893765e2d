"""python -m batchd — checks a batchd installation from the trainer's side.

Prints the client's version and where it is installed, finds the daemon's socket (--socket, else $BATCHD_SOCKET,
else /run/batchd/batchd.sock), says who serves it (the daemon's pid, uid and user, from the kernel: SO_PEERCRED),
asks the daemon for its status and lists the datasets it serves with their state. Warns when the socket lies in a
directory other users can write and the daemon is neither root nor you (another user's daemon could be serving it).
Exit status: 0 when a daemon answered; 1 with the reason and the fix on stderr when none did (no socket, permission
denied, nothing listening, no answer within --timeout, a daemon that does not run as --expect-owner); 2 for bad
arguments.
"""
import argparse
import os
import stat
import sys

from . import BatchdError, __version__, _batchd

START_DAEMON = ("start the daemon: `sudo systemctl start batchd` (the installed service; its socket is "
                "/run/batchd/batchd.sock), or by hand from a CMake build, on a socket in a directory only you can "
                "write: `build/bin/batchd --socket $XDG_RUNTIME_DIR/batchd.sock`, then `export "
                "BATCHD_SOCKET=$XDG_RUNTIME_DIR/batchd.sock` (or pass --socket)")
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


def ask_daemon(path, timeout, expected_owner=None):
    """The daemon's status dict; Failure if it cannot be reached, does not answer within `timeout` seconds (the
    client's request deadline) or does not run as `expected_owner`."""
    try:
        return _batchd.status(path, timeout=timeout, expected_owner=expected_owner)
    except BatchdError as e:
        silent = {"did not answer": "accepted the connection but did not answer",
                  "did not accept the connection": "did not accept the connection (its listen backlog is full)"}
        for said, reason in silent.items():
            if e.code == "unavailable" and said in str(e):
                raise Failure(f"the daemon at {path} {reason} within {timeout:g} s (stopped, or stuck?)",
                              "look at it: `systemctl status batchd`, `journalctl -u batchd`, `batchctl status`; "
                              "restart it if it stays silent (`sudo systemctl restart batchd`)") from None
        if e.code == "permission denied" and "runs as uid" in str(e):
            raise Failure(str(e), "point --socket or BATCHD_SOCKET at the daemon you mean; change --expect-owner "
                          "(or $BATCHD_EXPECT_OWNER) only if this daemon is the right one") from None
        if "no batchd is listening" in str(e):
            raise Failure(f"nothing listens on {path} (connection refused): the socket file is left from a daemon "
                          "that is no longer running", START_DAEMON)
        if e.code in ("I/O error", "permission denied") and "permission denied" in str(e).lower():
            raise Failure(str(e), JOIN_GROUP)
        raise Failure(f"the daemon at {path} did not answer: {e}",
                      "look at `journalctl -u batchd` (or the daemon's terminal) for why") from None


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
    parser.add_argument("--expect-owner", default=None, metavar="USER",
                        help="fail unless the daemon runs as USER (a uid or a user name; default: "
                             "$BATCHD_EXPECT_OWNER, else any user)")
    args = parser.parse_args(argv)
    if not args.timeout >= 0:
        parser.error("--timeout must be >= 0 (0 = no deadline)")

    import torch
    cuda = "built" if _batchd.has_cuda else f"not built: {_batchd.cuda_unavailable_reason}"
    print(f"batchd {__version__} (Python client in {os.path.dirname(os.path.abspath(__file__))})")
    print(f"  torch {torch.__version__}; batchd's CUDA path: {cuda}; "
          f"torch sees {torch.cuda.device_count() if torch.cuda.is_available() else 0} GPU(s)")
    path, source = find_socket(args.socket)
    print(f"socket: {path} ({source})")
    try:
        check_socket_file(path)
        status = ask_daemon(path, args.timeout, args.expect_owner)
    except Failure as f:
        print(f"batchd: FAILED: {f.reason}", file=sys.stderr)
        print(f"  fix: {f.fix}", file=sys.stderr)
        return 1
    daemon = status["daemon"]
    user = f" ({daemon['user']})" if daemon["user"] else ""
    print(f"daemon: batchd {status['version']}, instance {status['instance_id']}, pid {status['daemon_pid']}, "
          f"uid {daemon['uid']}{user}, up {status['uptime_seconds']:.0f} s, {status['workers']} workers, "
          f"{status['streams']} streams" + (", DRAINING (new streams are refused)" if status["draining"] else ""))
    if daemon["warning"]:
        print(f"  warning: {daemon['warning']}")
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
