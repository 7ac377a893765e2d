"""The daemon's whole status in Python (issue 41, item 3): `_batchd.status(sock)["full"]` is made from the same
tables as `batchctl status --json` (batchd/status_fields.h), so both have the same keys at every level, and a field
added to a status message reaches both."""
import json
import os
import subprocess

from batchd import _batchd
from conftest import ROOT

BATCHCTL = os.path.join(os.path.dirname(os.environ.get("BATCHD_BIN", os.path.join(ROOT, "build", "bin", "batchd"))),
                        "batchctl")


def keys(value, path=""):
    """Every key path of a JSON-like value; the elements of a list under "path[]"."""
    if isinstance(value, dict):
        out = set()
        for k, v in value.items():
            out |= {f"{path}.{k}"} | keys(v, f"{path}.{k}")
        return out
    if isinstance(value, list):
        return set().union(*(keys(v, path + "[]") for v in value)) if value else set()
    return set()


def test_the_status_dict_has_batchctl_jsons_keys_and_values(socket_path):
    client = _batchd.Client(socket_path)
    stream = client.open_stream(dataset="fashion-mnist-test", pipeline="fmnist", batch_size=100)
    stream.next().release()
    full = _batchd.status(socket_path)["full"]
    text = subprocess.run([BATCHCTL, "--socket", socket_path, "status", "--json"], check=True, capture_output=True,
                          text=True).stdout
    printed = json.loads(text)
    assert keys(full) == keys(printed)
    assert ".streams[].stages.read" in keys(full), "a nested message's fields, named as the proto names them"
    (mine,) = [s for s in full["streams"] if s["stream_id"] == stream.info["id"]]
    assert mine["dataset"] == "fashion-mnist-test" and mine["batch_size"] == 100 and mine["batches_delivered"] >= 1
    assert full["default_strategy"] == printed["default_strategy"] == "FILE_DESCRIPTOR"
    assert full["instance_id"] == printed["instance_id"] and full["daemon_pid"] == int(printed["daemon_pid"])
    stream.close()
