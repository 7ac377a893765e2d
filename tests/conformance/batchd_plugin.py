"""pytest plugin of the conformance run (tests/conformance/run_conformance.py): with BATCHD_CONFORMANCE=batchd, makes
torch.utils.data.DataLoader batchd.Loader before any test module is imported, so PyTorch's own test_dataloader.py
(`from torch.utils.data import DataLoader`, and `torch.utils.data.DataLoader(...)` in a few tests) builds every
loader with batchd: the one-word switch of the README, applied to PyTorch's own tests. Without the variable it does
nothing (the DataLoader baseline).

Either way, with BATCHD_CONFORMANCE_LOADERS=FILE it writes FILE: the tests that built a loader in the test process
(its __init__ called between the test's setup and teardown), one node id a line. Many tests of the file check
datasets, samplers or default_collate alone; these are the ones the conformance figure is about.

batchd.Loader then serves the tests' datasets as a user's own Dataset, through a daemon private to the test process
(batchd._daemon.private; $BATCHD_BIN names the build's daemon).
"""
import functools
import os

import pytest

_SWITCHED = pytest.StashKey[bool]()
_built = [False]  # a loader was built during the current test
_tests_with_loaders = []


def _count_constructions(cls):
    init = cls.__init__

    @functools.wraps(init)
    def counted(self, *args, **kwargs):
        _built[0] = True
        return init(self, *args, **kwargs)

    cls.__init__ = counted


def pytest_configure(config):
    import torch.utils.data
    import torch.utils.data.dataloader
    if os.environ.get("BATCHD_CONFORMANCE") == "batchd":
        import batchd
        torch.utils.data.DataLoader = batchd.Loader
        torch.utils.data.dataloader.DataLoader = batchd.Loader
        config.stash[_SWITCHED] = True
    if os.environ.get("BATCHD_CONFORMANCE_LOADERS"):
        _count_constructions(torch.utils.data.DataLoader)


def pytest_runtest_setup(item):
    _built[0] = False


def pytest_runtest_teardown(item):
    if _built[0]:
        _tests_with_loaders.append(item.nodeid)


def pytest_sessionfinish(session):
    path = os.environ.get("BATCHD_CONFORMANCE_LOADERS")
    if path:
        with open(path, "w") as f:
            f.writelines(f"{n}\n" for n in _tests_with_loaders)


def pytest_report_header(config):
    if config.stash.get(_SWITCHED, False):
        import batchd
        return f"conformance: torch.utils.data.DataLoader is batchd.Loader ({batchd.__file__})"
    return "conformance: torch.utils.data.DataLoader (the baseline)"
