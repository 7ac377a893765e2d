"""The daemon private to a trainer process, started by a Loader that finds no daemon (docs/operations.md).

  private.py   the private daemon: its directory, config, start, reload, end with the trainer
  binary.py    where its binary is found ($BATCHD_BIN, the package's bin/batchd, the build tree's, PATH, sbin)
  datasets.py  the names and TOML tables of the datasets it declares

Nothing here imports torch: a process can start a private daemon without it.
"""
