"""A batchd daemon private to this trainer process, for a Loader that finds no daemon and was given no socket.

private_daemon(workers) returns the process's one PrivateDaemon, started on first use under the trainer's uid:
  - the binary: binary.daemon_binary() ($BATCHD_BIN, the package's bin/batchd, the build tree's,
    PATH, /usr/sbin, /usr/local/sbin, /usr/bin);
  - its directory: <base>/batchd-private-<trainer pid>-<random>, mode 0700, base = $XDG_RUNTIME_DIR (else the
    temporary directory), holding its config (batchd.toml), socket (batchd.sock, mode 0600) and log (batchd.log:
    the daemon's stderr, named in every error about it);
  - its config: the datasets declared so far (declare_imagefolder/idx/tokens), `workers` worker processes (DataLoader's
    num_workers; 0 or None: 1; only the first call's value counts), no index cache, shm_strategy file_descriptor
    (memfds: nothing in /dev/shm unless a stream asks for file_system, and those the daemon unlinks when it stops).
One daemon per trainer process, shared by its Loaders: a dataset declared after the start is added to the config and
the daemon reloads it (SIGHUP; running streams go on), so a second Loader over another folder costs no restart.

Lifetime: it ends with the trainer. On a normal exit (or close(), or the PrivateDaemon collected) a finalizer sends
SIGTERM, waits (SIGKILL after 10 s) and removes the directory; the daemon's drain unlinks every segment and the
socket. If the trainer dies without running it (SIGKILL, a crash), the daemon sees it itself: it runs with
`--exit-with-parent <trainer pid>` (a pidfd of its parent, daemon/server/parent_watch.h; not when the trainer is a
container's pid 1, whose exit kills every process of the container) and drains the same way; its
directory (the log, for a post-mortem) stays until the next private daemon of this user starts, which removes every
private directory whose daemon is gone (its socket's lock free) and whose trainer is gone. PR_SET_PDEATHSIG is not
used: it follows the thread that forked, so a Loader built in a short-lived thread would lose its daemon with that
thread, and it needs a preexec_fn, which is unsafe in a threaded process. The daemon runs in its own session, so a
Ctrl-C at the terminal reaches the trainer only (which may still want its Loaders while it handles it).
A forked child of the trainer sees the same PrivateDaemon and may use its socket; only the trainer stops it.
"""
import fcntl
import glob
import json
import os
import signal
import socket as _socket
import stat
import subprocess
import tempfile
import threading
import time
import weakref

from .. import _batchd
from .._batchd import BatchdError
from .binary import daemon_binary
from .datasets import dataset_name, dataset_table

START_TIMEOUT_S = 60.0  # a large ImageFolder is indexed before the socket answers
STOP_TIMEOUT_S = 10.0
_PREFIX = "batchd-private-"
_SERVICE_VARIABLES = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM")

_lock = threading.Lock()
_daemon = None


def no_daemon_answers(socket=None):
    """True when a Loader with this `socket=` should start a private daemon: none given, $BATCHD_SOCKET unset, and
    nothing at the default socket (no file there, or nothing listening: a dead daemon's). A daemon that is there but
    refuses (permission, another user's) is not "none": the Loader's connect then raises its error, with the fix."""
    if socket or os.environ.get("BATCHD_SOCKET"):
        return False
    with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as s:
        try:
            s.connect(_batchd.default_socket_path())
            return False
        except (FileNotFoundError, ConnectionRefusedError):
            return True
        except OSError:
            return False


def private_daemon(workers=None):
    """The trainer's PrivateDaemon, started now if it is not running. workers: the daemon's worker processes (0 or
    None: 1), used only when this call starts it."""
    global _daemon
    with _lock:
        if _daemon is None or not _daemon.running():
            _daemon = PrivateDaemon(max(1, int(workers or 0)))
        return _daemon


def _base_dir():
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime) and os.stat(runtime).st_uid == os.getuid():
        return runtime
    return tempfile.gettempdir()


def _stop(proc, directory, owner):
    """The finalizer: SIGTERM, wait, SIGKILL after STOP_TIMEOUT_S; remove the directory. Only the trainer that
    started it (not a forked child exiting)."""
    if os.getpid() != owner:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if directory is not None:
        _remove_tree(directory)


def _remove_tree(directory):
    for root, dirs, files in os.walk(directory, topdown=False):
        for name in files:
            os.unlink(os.path.join(root, name))
        for name in dirs:
            os.rmdir(os.path.join(root, name))
    os.rmdir(directory)


def _gone(pid):
    try:
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        return True
    except PermissionError:
        return False


def remove_stale_dirs(base):
    """Removes this user's private directories under `base` whose trainer and daemon are both gone: the trainer's pid
    (in the name) is not running and the daemon's socket lock (batchd.sock.lock, flocked while it runs) is free."""
    for directory in glob.glob(os.path.join(base, _PREFIX + "*-*")):
        try:
            pid = int(os.path.basename(directory)[len(_PREFIX):].split("-")[0])
            st = os.lstat(directory)
            if st.st_uid != os.getuid() or not stat.S_ISDIR(st.st_mode) or not _gone(pid):
                continue
            lock = os.path.join(directory, "batchd.sock.lock")
            if os.path.exists(lock):
                with open(lock, "rb") as f:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: its daemon still runs
            _remove_tree(directory)
        except (ValueError, OSError):
            continue


class PrivateDaemon:
    """A running private daemon: .socket, .log_path, .directory, .pid. Thread-safe."""

    def __init__(self, workers):
        binary = daemon_binary()
        base = _base_dir()
        remove_stale_dirs(base)
        self.directory = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=base)  # mode 0700
        self.socket = os.path.join(self.directory, "batchd.sock")
        self.log_path = os.path.join(self.directory, "batchd.log")
        self._config_path = os.path.join(self.directory, "batchd.toml")
        if len(self.socket.encode()) >= 108:
            _remove_tree(self.directory)
            raise BatchdError(f"the private daemon's socket path {self.socket} is too long for a Unix socket (108 "
                              "bytes): set TMPDIR or XDG_RUNTIME_DIR to a shorter directory")
        self.workers, self._datasets, self._lock = workers, {}, threading.Lock()
        self._write_config()
        args = [binary, "--config", self._config_path]
        if os.getpid() != 1:  # a container's init: its exit kills the whole pid namespace, the daemon included
            args += ["--exit-with-parent", str(os.getpid())]
        # Not the trainer's service: a trainer run by systemd must not have its daemon talk to its service manager.
        env = {k: v for k, v in os.environ.items() if k not in _SERVICE_VARIABLES}
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                          start_new_session=True, close_fds=True)
        self.pid = self._proc.pid
        self._finalizer = weakref.finalize(self, _stop, self._proc, self.directory, os.getpid())
        try:
            self._wait(self._answers, f"accept connections on {self.socket}")
        except BaseException:
            self._abandon()
            raise

    def running(self):
        return self._finalizer.alive and self._proc.poll() is None

    def _abandon(self):
        """A failed start: the daemon stops, the directory stays for its log (removed by a later start once this
        trainer is gone)."""
        self._finalizer.detach()
        _stop(self._proc, None, os.getpid())

    def close(self):
        """Stops the daemon and removes its directory (what the finalizer does at exit). Idempotent."""
        self._finalizer()

    def declare_imagefolder(self, root):
        """The dataset name under which this daemon serves the ImageFolder tree at `root` (declared now if new)."""
        return self._declare("imagefolder", root=os.path.realpath(root))

    def declare_idx(self, images, labels):
        """The dataset name of MNIST-style IDX files (raw or .gz)."""
        return self._declare("idx", images=os.path.realpath(images), labels=os.path.realpath(labels))

    def declare_tokens(self, path, seq_len, dtype="uint16"):
        """The dataset name of a token file (nanoGPT's train.bin) with windows of seq_len."""
        return self._declare("tokens", path=os.path.realpath(path), seq_len=int(seq_len), dtype=dtype)

    def _declare(self, format, **keys):
        name = dataset_name(format, keys)
        with self._lock:
            if name not in self._datasets:
                self._datasets[name] = (format, keys)
                self._write_config()
                self._proc.send_signal(signal.SIGHUP)  # reload [datasets]: running streams go on
            self._wait(lambda: self._dataset_ready(name), f"serve dataset {name}")
        return name

    def _write_config(self):
        lines = ["# Written by batchd.Loader for its private daemon (batchd/_daemon/private.py).", "[daemon]",
                 f"socket = {json.dumps(self.socket)}", 'socket_mode = "0600"', f"workers = {self.workers}",
                 'cache_dir = ""', 'shm_strategy = "file_descriptor"', 'log_level = "info"', ""]
        for name, (format, keys) in self._datasets.items():
            lines += dataset_table(name, format, keys)
        tmp = self._config_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, self._config_path)  # a reload never reads half a file

    def _answers(self):
        try:
            _batchd.status(self.socket, timeout=5)
            return True
        except BatchdError:
            return False

    def _dataset_ready(self, name):
        for entry in _batchd.status(self.socket, timeout=5)["datasets"]:
            entry_name, _, detail = entry.partition(" (")
            if entry_name == name:
                if detail.startswith("unavailable: "):
                    raise BatchdError(f"the private daemon cannot serve dataset {name}: {detail[:-1]} (its log: "
                                      f"{self.log_path})")
                return not detail.startswith("indexing")
        return False

    def _wait(self, ready, what, timeout=START_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while not ready():
            if self._proc.poll() is not None:
                raise BatchdError(f"the private daemon ({self._proc.args[0]}) exited with status "
                                  f"{self._proc.returncode} before it was ready; its log {self.log_path} ends:\n"
                                  + self.log_tail())
            if time.monotonic() > deadline:
                raise BatchdError(f"the private daemon (pid {self.pid}) did not {what} within {timeout:.0f} s; "
                                  f"its log {self.log_path} ends:\n" + self.log_tail())
            time.sleep(0.02)

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError as e:
            return f"(cannot read it: {e})"
