"""Where a batchd.Loader's data come from: a dataset the daemon declares (by name), or a torchvision ImageFolder /
Subset object the daemon recognises as one of its folders (folder.py); and which daemon serves it: the one at
socket= / $BATCHD_SOCKET / the default socket, or, for a dataset object when none answers (or private=True), a
daemon private to this trainer (_daemon/private.py) that declares the folder itself.
"""
import torch

from .folder import folder_options
from .._daemon.private import no_daemon_answers, private_daemon


def resolve_source(dataset, socket, private, num_workers, transform, pipeline):
    """(stream options naming the data, the transform to translate, the socket to connect to).

    dataset: a str (a daemon dataset's name: {"dataset": name}) or an ImageFolder / DatasetFolder / Subset
    ({"folder": ..., "indices": ...}; its own .transform is the recipe unless transform= or pipeline= is given), or
    any other map-style Dataset ({"external": {"size", "workers", "name"}}: the trainer's own Dataset, made by
    worker processes the Loader starts; transform=/pipeline= refused), an IterableDataset too. private: None =
    a private daemon only for a dataset object when no daemon answers and no socket is given; True = always (a
    dataset object); False = never."""
    if isinstance(dataset, str):
        if private:
            raise ValueError("batchd.Loader: private=True needs a dataset object (an ImageFolder): a daemon dataset "
                             "named by string is declared in a daemon's config")
        return {"dataset": dataset}, transform, socket
    if isinstance(dataset, torch.utils.data.IterableDataset):  # iterated by the workers: your own, never the daemon's
        return _own_source(dataset, socket, private, num_workers, transform, pipeline, "an IterableDataset")
    if not isinstance(dataset, torch.utils.data.Dataset) and not (hasattr(type(dataset), "__getitem__")
                                                                  and hasattr(type(dataset), "__len__")):
        raise TypeError(f"batchd.Loader: dataset must be a daemon dataset's name (str), a torch Dataset or an object "
                        f"with __getitem__ and __len__ (a list, a Tensor), as DataLoader takes; not "
                        f"{type(dataset).__name__}")
    try:
        options, own_transform = folder_options(dataset)
    except (TypeError, ValueError) as native_refusal:  # a Dataset the daemon cannot reproduce: your own
        return _own_source(dataset, socket, private, num_workers, transform, pipeline, native_refusal)
    if own_transform is not None and (transform is not None or pipeline is not None):
        raise ValueError("batchd.Loader: the ImageFolder has a transform and the Loader got transform=/pipeline= too: "
                         "give the recipe once (ImageFolder(root, transform=...) is what DataLoader would use)")
    if transform is None and pipeline is None:
        if own_transform is None:
            raise ValueError("batchd.Loader: the ImageFolder has no transform, so its samples are PIL images, which "
                             "cannot be batched: build it with transform=transforms.Compose([..., ToTensor()])")
        transform = own_transform
    return options, transform, _daemon_socket(socket, private, num_workers, options["folder"]["root"])


def _own_source(dataset, socket, private, num_workers, transform, pipeline, native_refusal):
    """A Dataset batchd does not serve natively: the trainer's own (see resolve_source)."""
    iterable = isinstance(dataset, torch.utils.data.IterableDataset)
    if transform is not None or pipeline is not None:
        raise ValueError(f"batchd.Loader: {type(dataset).__name__} is served as your own Dataset "
                         f"({native_refusal}), so its own {'__iter__' if iterable else '__getitem__'} makes each "
                         f"sample: transform= and pipeline= (the daemon's native ops) do not apply; apply your "
                         f"transforms in the Dataset")
    try:
        size = 1 if iterable else len(dataset)  # an iterable's: unused (its passes are fed: _own/fed_pass.py)
    except Exception as e:  # noqa: BLE001 (the dataset's own code)
        raise TypeError(f"batchd.Loader: len({type(dataset).__name__}) raised {type(e).__name__}: {e}; a map-style "
                        f"Dataset needs __len__") from e
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"batchd.Loader: len({type(dataset).__name__}) is {size!r}: a Dataset to batch needs at "
                         f"least one sample")
    name = type(dataset).__name__
    external = {"size": size, "workers": max(1, num_workers), "name": name if name.isidentifier() else "Dataset"}
    return {"external": external}, None, _daemon_socket(socket, private, 1, None)


def _daemon_socket(socket, private, num_workers, folder_root):
    """The socket to use: `socket`, or a private daemon's (declaring `folder_root` if any) when asked or when no
    daemon answers."""
    if private or (private is None and no_daemon_answers(socket)):
        if socket:
            raise ValueError("batchd.Loader: private=True starts a daemon of its own: leave socket= unset")
        daemon = private_daemon(workers=num_workers)
        if folder_root is not None:
            daemon.declare_imagefolder(folder_root)
        socket = daemon.socket
    return socket

