"""How a worker's failure reaches the trainer: an exception it sent (torch's ExceptionWrapper, pickled) raised with
its own type and traceback, as DataLoader raises it, and the error that ends a pass of an IterableDataset whose
worker died."""
import pickle
import signal

from .._batchd import BatchdError


def reraise(wrapped):
    """Raises the exception a worker sent ((torch's ExceptionWrapper pickled, its text): worker_main._wrapped) with
    its own type and the worker's traceback; RuntimeError with the same text if it cannot be unpickled here."""
    blob, text = wrapped
    try:
        wrapper = pickle.loads(blob)
    except Exception:  # noqa: BLE001 - its class is not importable in the trainer: keep the text
        raise RuntimeError(text) from None
    wrapper.reraise()


def raise_worker_error(worker_id, message):
    """Raises a worker's ERROR message: the exception it wraps, with its own type and the worker's traceback (as
    DataLoader does), else BatchdError with the text."""
    if len(message) > 2 and message[2] is not None:
        reraise(message[2])
    raise BatchdError(f"batchd.Loader: worker {worker_id}: {message[1]}")


def lost_iteration(lost):
    """The error that ends a pass of an IterableDataset whose workers died, `lost` [(worker id, its process)]
    (DataLoader raises RuntimeError too). Marked .lost_iteration: the pass stops there."""
    def how(code):
        if code == 75:
            return ("was ended by its client library (status 75: the daemon detached it past its task's deadline, "
                    "daemon.task_timeout_min_s, or its connection to the daemon was lost)")
        try:
            return f"was killed by signal {signal.Signals(-code).name}" if code is not None and code < 0 else \
                f"exited with status {code}"
        except ValueError:
            return f"was killed by signal {-code}"
    workers = "; ".join(f"worker {w} (pid {p.pid}) {how(p.exitcode)}" for w, p in lost)
    error = BatchdError(f"batchd.Loader: {workers} while iterating your IterableDataset: where an iterator stood is "
                        f"lost with its worker, so this pass ends here (a batch made again would repeat samples); "
                        f"replacement workers start for the next pass")
    error.lost_iteration = True
    return error
