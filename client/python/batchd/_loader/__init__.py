"""batchd.Loader itself (batchd/__init__.py exports it from loader.py): DataLoader's interface over a batchd stream.

  loader.py             the Loader class: its arguments, iteration, epochs
  plan.py               what its stream is before any batch: ranks, the daemon's dry run, len(), frozen attributes
  passes.py             how its passes read the stream (host or CUDA), state_dict(), close()
  views.py              its .dataset, .sampler and .batch_sampler when the trainer gave none
  support.py            rank and world size, the wait while a dataset is indexed, the stream sources
  source.py, folder.py  where the data come from: a daemon dataset by name, an ImageFolder, your own Dataset
  dataloader_args.py, dataloader_checks.py, lm_args.py
                        DataLoader's arguments as the Loader takes them, DataLoader's checks, pipeline "lm"'s options

Your own Dataset's parts are in batchd._own, the transform translators in batchd._transforms, the private daemon in
batchd._daemon.
"""
