"""Your own Dataset (or IterableDataset) served through batchd: worker processes the Loader starts make its
samples or batches, under the trainer's uid, and the daemon carries them (docs/python.md, docs/operations.md).

The trainer's side:
  worker_pool.py, pool_feed.py  the workers: start, replace, layout, the first round and index lists of a fed pass
  worker_errors.py              a worker's exception raised in the trainer with its own type
  fed_args.py, iterable.py      which sampler runs (DataLoader's in the trainer, or batchd's); an IterableDataset's
  fed_pass.py, fed_stream.py    the passes whose sampler runs in the trainer, and their one stream
The worker's side (worker_main.worker_main is the process's target: under spawn and forkserver it is pickled by
this module path):
  worker_main.py, worker_process.py  the worker's body and what makes it DataLoader-like (worker info, parent)
  worker_feed.py, worker_collate.py, worker_iterable.py  whole batches: fed lists, collate_fn, iterating
  dataset.py                    a sample's fixed layout, its check, the per-sample seeding
Both sides:
  batch_codec.py, slot_collate.py  a collated batch in a slot's bytes (signed), and collation straight into a slot
"""
