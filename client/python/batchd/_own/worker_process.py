"""What makes a process one of your own Dataset's workers, as DataLoader makes its own: get_worker_info() set, and
the process tied to the trainer's life (it exits when the trainer goes)."""
import os
import threading
import time


def set_worker_info(worker_id, num_workers, seed, dataset):
    """torch.utils.data.get_worker_info() inside this process, as DataLoader's workers set it."""
    from torch.utils.data._utils import worker as torch_worker
    torch_worker._worker_info = torch_worker.WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                                        dataset=dataset)


def follow_parent(parent_pid, forked_by_main_thread):
    """Ends this process when the trainer (`parent_pid`) goes, whatever it is doing: a daemon thread polls getppid()
    every 0.2 s (as DataLoader's workers watch theirs) and exits with status 75 (as the client library does for a
    lost parent). The pipe cannot tell: under fork this worker and its later siblings hold the trainer's ends too.
    When the trainer's main thread forked it, also PR_SET_PDEATHSIG (SIGKILL at once, even while C code holds the
    GIL); not otherwise, as the signal follows the forking thread: a worker forked by a thread that ends (a Loader
    first iterated in a thread) would be killed while its trainer goes on."""
    if forked_by_main_thread:
        try:
            import ctypes
            import signal
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(0.2)
        os._exit(75)

    threading.Thread(target=watch, name="batchd-parent-watch", daemon=True).start()
