"""Where a batchd.Loader's data come from: a dataset the daemon declares (by name), or a torchvision ImageFolder /
Subset object the daemon recognises as one of its folders (_folder.py); and which daemon serves it: the one at
socket= / $BATCHD_SOCKET / the default socket, or, for a dataset object when none answers (or private=True), a
daemon private to this trainer (_private_daemon.py) that declares the folder itself.
"""
import torch

from ._folder import folder_options
from ._private_daemon import no_daemon_answers, private_daemon


def resolve_source(dataset, socket, private, num_workers, transform, pipeline):
    """(stream options naming the data, the transform to translate, the socket to connect to).

    dataset: a str (a daemon dataset's name: {"dataset": name}) or an ImageFolder / DatasetFolder / Subset
    ({"folder": ..., "indices": ...}; its own .transform is the recipe unless transform= or pipeline= is given,
    TypeError for any other Dataset). private: None = a private daemon only for a dataset object when no daemon
    answers and no socket is given; True = always (a dataset object); False = never."""
    if isinstance(dataset, str):
        if private:
            raise ValueError("batchd.Loader: private=True needs a dataset object (an ImageFolder): a daemon dataset "
                             "named by string is declared in a daemon's config")
        return {"dataset": dataset}, transform, socket
    if not isinstance(dataset, torch.utils.data.Dataset):
        raise TypeError(f"batchd.Loader: dataset must be a daemon dataset's name (str) or a torchvision ImageFolder "
                        f"(or a Subset of one), not {type(dataset).__name__}")
    options, own_transform = folder_options(dataset)
    if own_transform is not None and (transform is not None or pipeline is not None):
        raise ValueError("batchd.Loader: the ImageFolder has a transform and the Loader got transform=/pipeline= too: "
                         "give the recipe once (ImageFolder(root, transform=...) is what DataLoader would use)")
    if transform is None and pipeline is None:
        if own_transform is None:
            raise ValueError("batchd.Loader: the ImageFolder has no transform, so its samples are PIL images, which "
                             "cannot be batched: build it with transform=transforms.Compose([..., ToTensor()])")
        transform = own_transform
    if private or (private is None and no_daemon_answers(socket)):
        if socket:
            raise ValueError("batchd.Loader: private=True starts a daemon of its own: leave socket= unset")
        daemon = private_daemon(workers=num_workers)
        daemon.declare_imagefolder(options["folder"]["root"])
        socket = daemon.socket
    return options, transform, socket

