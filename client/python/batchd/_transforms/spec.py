"""A Loader's pipeline spec from its `transform=` and `batch_transform=`: the op-dict form, checked for shape here.

The spec is the wire message PipelineSpec (proto/batchd_client.proto) as Python data::

    {"ops": [{"op": "resize", "size": 232, "interpolation": "bicubic"}, ...],   # per sample, in order
     "batch_ops": [{"op": "mixup", "alpha": 0.2}, ...]}                         # per batch, after collate

An op dict has the key "op" (the op's name, docs/operations.md "Pipelines") and its parameters. A parameter's value
is one of the wire's kinds: a number (int or float; numpy and 0-d torch numbers are taken as their value), a list of
numbers, a str, a bool, or a list of op dicts (random_apply / random_choice / random_order's "ops"). A value of None
means "not given" (the op's default), as torchvision's `max_size=None` or `fill=None`.

Only the form is checked here (BatchdError naming the op's position and key); what the names and values mean (an
unknown op or key, a range, an op that does not fit its input) is the daemon's to check, once, when it plans the
stream: its error names the op's position and key too.
"""
import numbers

from .._batchd import BatchdError


def spec_error(message):
    """A BatchdError with code "invalid argument" (as the daemon's refusals of a spec have)."""
    error = BatchdError(message)
    error.code = "invalid argument"
    return error


def _number(value, where):
    """value as an int or float, or None when it is not a number (bool is not one)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    item = getattr(value, "item", None)  # a 0-d torch tensor or numpy array
    if item is not None and getattr(value, "ndim", None) == 0:
        return _number(item(), where)
    return None


def check_value(value, where):
    """value in one of the wire's kinds (see the module docstring), or BatchdError naming `where`."""
    if isinstance(value, (bool, str)):
        return value
    number = _number(value, where)
    if number is not None:
        return number
    if isinstance(value, dict):
        raise spec_error(f"{where} is a dict; a parameter is a number, a list of numbers, a str, a bool or a list "
                         "of op dicts")
    try:
        items = list(value)
    except TypeError:
        raise spec_error(f"{where} is a {type(value).__name__}; a parameter is a number, a list of numbers, a str, "
                         "a bool or a list of op dicts") from None
    if items and all(isinstance(x, dict) for x in items):
        return check_ops(items, where)
    out = []
    for i, x in enumerate(items):
        number = _number(x, where)
        if number is None:
            raise spec_error(f"{where}[{i}] is {x!r}: a list holds numbers only, or op dicts only")
        out.append(number)
    return out


def check_op(op, where):
    """A copy of op dict `op` with plain values and None-valued keys left out; BatchdError naming `where`."""
    if not isinstance(op, dict):
        raise spec_error(f"{where} is a {type(op).__name__}, not an op dict such as "
                         "{'op': 'resize', 'size': 232}")
    name = op.get("op")
    if not isinstance(name, str) or not name:
        raise spec_error(f"{where} has no \"op\" name: an op dict is {{'op': NAME, PARAM: VALUE, ...}}")
    out = {"op": name}
    for key, value in op.items():
        if not isinstance(key, str):
            raise spec_error(f"{where} ({name}) has a key {key!r}; keys are parameter names (str)")
        if key != "op" and value is not None:
            out[key] = check_value(value, f"{where} ({name}) key '{key}'")
    return out


def check_ops(ops, where):
    """A list of op dicts, each checked by check_op()."""
    if isinstance(ops, (str, bytes, dict)):
        raise spec_error(f"{where} must be a list of op dicts, not a {type(ops).__name__}")
    return [check_op(op, f"{where}[{i}]") for i, op in enumerate(ops)]


def _is_op_dict_list(value):
    return isinstance(value, (list, tuple)) and all(isinstance(x, dict) for x in value)


def spec_from(transform, batch_transform=None, exact_decode=None):
    """{"ops": [...], "batch_ops": [...]} for Loader(transform=..., batch_transform=..., exact_decode=...).

    transform: a list of op dicts, or torchvision transforms (translate.ops_from_torchvision). A list may
        mix the two. exact_decode: None, or True/False for a `decode` op put first (a list that starts with its own
        decode op may not have it too).
    batch_transform: None, a list of op dicts, or the references' RandomMixup/RandomCutmix (a torchvision
        RandomChoice of them): batch.py.
    Raises BatchdError (code "invalid argument") naming what cannot be used.
    """
    if _is_op_dict_list(transform):
        ops = check_ops(transform, "transform")
    else:  # torchvision is imported only here: op dicts need none
        from .translate import ops_from_torchvision
        ops = ops_from_torchvision(transform)
    if exact_decode is not None:
        if ops and ops[0]["op"] == "decode":
            raise spec_error("exact_decode= and a transform that starts with a decode op: give exact_decode in the "
                             "decode op only")
        ops.insert(0, {"op": "decode", "exact_decode": bool(exact_decode)})
    if batch_transform is None:
        batch_ops = []
    elif _is_op_dict_list(batch_transform):
        batch_ops = check_ops(batch_transform, "batch_transform")
    else:
        from .batch import batch_ops_from_torchvision
        batch_ops = batch_ops_from_torchvision(batch_transform)
    return {"ops": ops, "batch_ops": batch_ops}


def pipeline_spec(pipeline, transform, batch_transform, crop_size, resize_size, exact_decode):
    """The spec of Loader(transform=...), or None for Loader(pipeline=...); BatchdError (code "invalid argument")
    unless exactly one of the two is given, and for the options that belong to the other."""
    if (pipeline is None) == (transform is None):
        raise spec_error("batchd.Loader() takes exactly one of pipeline= (a name: \"train224\", \"fmnist\", a "
                         "config's [pipelines.NAME]) and transform= (op dicts or a torchvision Compose); got "
                         + ("both" if pipeline is not None else "neither"))
    if transform is None:
        if batch_transform is not None:
            raise spec_error("batch_transform= needs transform=: a pipeline given by name has its own batch ops "
                             "(none for the presets); write the recipe as transform= to add mixup/cutmix")
        return None
    for key, value in (("crop_size", crop_size), ("resize_size", resize_size)):
        if value is not None:
            raise spec_error(f"{key}= is an option of the vision presets (pipeline=); with transform= the sizes "
                             "are the ops' own (e.g. RandomResizedCrop(size), Resize(size))")
    return spec_from(transform, batch_transform, exact_decode)
