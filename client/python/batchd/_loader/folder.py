"""A torchvision ImageFolder (or a Subset of one) as stream options: what batchd.Loader(dataset, ...) sends the daemon.

folder_options(dataset) -> (kwargs, transform):
  kwargs     for _batchd.Client.open_stream / plan_stream: {"folder": {...}} and, for a Subset, {"indices": [...]}
             (the dataset indices in the Subset's order; nested Subsets resolved). The daemon serves the stream if one
             of its declared imagefolder datasets has this root (the realpath of its own configured root, compared as
             a string: it never opens the path sent), the same classes and the same sample list; otherwise open_stream
             raises BatchdError naming what differs and the fixes.
  transform  the ImageFolder's .transform (None if it has none), for the Loader to translate into ops.

Only what batchd reproduces exactly is accepted; anything else raises TypeError (the object's kind, or its loader)
or ValueError (its contents), each saying why and what to do:
  - torchvision.datasets.ImageFolder or DatasetFolder itself (a subclass may read or label samples its own way);
  - the default loader (torchvision.datasets.folder.default_loader): batchd decodes the files itself;
  - no is_valid_file (the folder's .extensions is None then): the daemon lists files by extension;
  - target_transform None: labels are the class indices;
  - class_to_idx the position of each class in .classes (as find_classes makes it);
  - every sample a .jpg, .jpeg or .png (batchd's decoders);
  - torch.utils.data.Subset itself, of one of the above.
Root, classes and digest come from the object's own .root, .classes and .samples: nothing is listed again.
"""
import os
import sys

from .. import _batchd

DECODED = (".jpg", ".jpeg", ".png")
_ALTERNATIVE = ("batchd.Loader serves it as your own Dataset (its worker processes run its __getitem__; "
                "docs/operations.md, \"Your own Dataset\")")


def folder_options(dataset):
    """(kwargs for open_stream / plan_stream, the ImageFolder's transform) for an ImageFolder or a Subset of one."""
    folder, indices = _unwrap_subsets(dataset)
    _check_folder(folder)
    kwargs = {"folder": folder_reference(folder)}
    if indices is not None:
        kwargs["indices"] = indices
    return kwargs, folder.transform


def folder_reference(folder):
    """The folder= dict (wire FolderRef) of a checked ImageFolder: root, classes, num_samples, class_sizes, digest."""
    root = os.fspath(folder.root)
    prefix = os.path.join(root, "")
    class_sizes = [0] * len(folder.classes)
    pairs = []
    for i, (path, target) in enumerate(folder.samples):
        if not isinstance(target, int) or not 0 <= target < len(class_sizes):
            raise ValueError(f"{type(folder).__name__}.samples[{i}] has label {target!r}, not a class index "
                             f"0..{len(class_sizes) - 1}: rebuild the dataset ({_ALTERNATIVE} if it was changed "
                             f"on purpose)")
        if not path.lower().endswith(DECODED):
            raise ValueError(f"sample {i} of the ImageFolder ({path}) is not a .jpg, .jpeg or .png: batchd decodes "
                             f"only those; convert it or move it out of the folder, or {_ALTERNATIVE}")
        class_sizes[target] += 1
        relative = path[len(prefix):] if path.startswith(prefix) else os.path.relpath(path, root)
        pairs.append((os.fsencode(relative), target))
    return {"root": os.path.realpath(root), "classes": list(folder.classes), "num_samples": len(pairs),
            "class_sizes": class_sizes, "digest": _batchd.folder_digest(pairs)}


def _unwrap_subsets(dataset):
    """(the innermost dataset, the dataset indices a chain of Subsets reads in order, or None without a Subset)."""
    try:
        from torch.utils.data import Subset
    except ImportError:  # no torch: it cannot be a Subset
        return dataset, None
    indices = None
    while isinstance(dataset, Subset):
        if type(dataset) is not Subset:
            raise TypeError(f"{type(dataset).__name__} is a subclass of torch.utils.data.Subset, which may map "
                            f"indices its own way: batchd serves torch.utils.data.Subset itself; build one, or "
                            f"{_ALTERNATIVE}")
        inner = [_index(i, len(dataset.dataset)) for i in dataset.indices]
        indices = inner if indices is None else [inner[i] for i in indices]
        dataset = dataset.dataset
    return dataset, indices


def _index(i, n):
    """A Subset index as a dataset index: an int in [-n, n), negative ones counted from the end (as indexing does)."""
    i = int(i)
    if not -n <= i < n:
        raise ValueError(f"Subset index {i} is out of range for a dataset of {n} samples")
    return i + n if i < 0 else i


def _check_folder(folder):
    # An object of a torchvision class exists only once torchvision.datasets is imported: otherwise it cannot be one,
    # and importing it (~0.2 s) would only delay the first pass of your own Dataset.
    DatasetFolder = ImageFolder = default_loader = None
    if "torchvision.datasets" in sys.modules:
        try:
            from torchvision.datasets import DatasetFolder, ImageFolder
            from torchvision.datasets.folder import default_loader
        except ImportError:
            pass
    kind = type(folder)
    if DatasetFolder is None or kind not in (ImageFolder, DatasetFolder):
        if DatasetFolder is not None and isinstance(folder, DatasetFolder):
            raise TypeError(f"{kind.__module__}.{kind.__name__} is a subclass of torchvision's "
                            f"{'ImageFolder' if isinstance(folder, ImageFolder) else 'DatasetFolder'}: it may "
                            f"list, load or label samples its own way, which batchd cannot run (the daemon reads "
                            f"and decodes the files itself). Pass torchvision.datasets.ImageFolder itself, or "
                            f"{_ALTERNATIVE}")
        raise TypeError(f"batchd serves a torchvision ImageFolder / DatasetFolder (or a torch.utils.data.Subset of "
                        f"one) natively, or a dataset of the daemon by name; a {kind.__module__}.{kind.__name__} "
                        f"is neither (batchd.Loader serves other Dataset objects as your own: its workers run their "
                        f"__getitem__)")
    name = kind.__name__
    if folder.loader is not default_loader:
        raise TypeError(f"this {name} has a custom loader ({getattr(folder.loader, '__name__', folder.loader)!r}): "
                        f"batchd decodes the files itself, as torchvision's default_loader does, and cannot run "
                        f"yours. Drop loader=, or {_ALTERNATIVE}")
    if folder.extensions is None:
        raise TypeError(f"this {name} was built with is_valid_file=: batchd's daemon lists the folder by file "
                        f"extension and cannot run your filter. Drop is_valid_file= (move the files it rejects out "
                        f"of the folder), or {_ALTERNATIVE}")
    if folder.target_transform is not None:
        raise TypeError(f"this {name} has a target_transform ({folder.target_transform!r}): batchd's labels are "
                        f"the class indices. Set target_transform=None and apply it to the labels in your loop, or "
                        f"{_ALTERNATIVE}")
    if folder.class_to_idx != {c: i for i, c in enumerate(folder.classes)}:
        raise ValueError(f"this {name}'s class_to_idx is not each class's position in .classes (as find_classes "
                         f"makes it): batchd's labels are those positions; rebuild the dataset, or {_ALTERNATIVE}")
