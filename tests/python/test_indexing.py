"""batchd.Loader on a dataset the daemon is still indexing (a webdataset right after the daemon started): it waits up
to index_timeout seconds, or raises at once with index_timeout=0."""
import io
import os
import tarfile
import tempfile
import time

import numpy as np
import pytest
from PIL import Image

import batchd
from conftest import _run_daemon

SHARDS = 4000  # one sample each: indexing them takes a few seconds, long enough to be seen under way


def _jpeg(seed):
    pixels = np.random.default_rng(seed).integers(0, 256, size=(40, 48, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG")
    return out.getvalue()


@pytest.fixture(scope="module")
def indexing_daemon():
    with tempfile.TemporaryDirectory(prefix="batchd-py-indexing-") as tmp:
        shards = os.path.join(tmp, "shards")
        os.makedirs(shards)
        image = _jpeg(0)
        for s in range(SHARDS):
            with tarfile.open(os.path.join(shards, f"shard-{s:06d}.tar"), "w") as tar:
                for name, data in ((f"s{s:06d}.jpg", image), (f"s{s:06d}.cls", str(s % 7).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            f.write(f'[datasets.wds]\nformat = "webdataset"\nshards = "{shards}/shard-{{000000..{SHARDS - 1:06d}}}.tar"\n')
        cache = os.path.join(tmp, "cache")  # empty: the daemon must index every shard
        yield from _run_daemon(tmp, ["--config", config, "--cache-dir", cache])


def test_the_loader_waits_while_the_dataset_is_indexed_or_raises_with_index_timeout_0(indexing_daemon):
    started = time.monotonic()
    with pytest.raises(batchd.BatchdError) as refused:
        len(batchd.Loader("wds", as_dict=True, shuffle=True, pipeline="val224", batch_size=500, socket=indexing_daemon, index_timeout=0))
    assert refused.value.code == "unavailable"
    assert "dataset 'wds' is indexing (" in str(refused.value), str(refused.value)

    loader = batchd.Loader("wds", as_dict=True, pipeline="val224", batch_size=500, shuffle=False, socket=indexing_daemon)
    assert len(loader) == SHARDS // 500  # planned once the index is done, after waiting for it
    batch = next(iter(loader))
    assert batch["image"].shape == (500, 3, 224, 224)
    assert batch["index"].tolist() == list(range(500))
    assert batch["label"].tolist() == [i % 7 for i in range(500)]
    print(f"indexed {SHARDS} shards within {time.monotonic() - started:.1f} s")
