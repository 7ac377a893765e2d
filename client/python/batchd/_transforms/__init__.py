"""A Loader's pipeline spec: transform= and batch_transform= as batchd's op dicts (docs/pipeline_ops.md).

  spec.py       the op-dict form and its checks; the spec the daemon gets (needs no torchvision)
  translate.py  torchvision transforms -> op dicts: the walker (Compose, nesting, refusals)
  v1.py, v2.py  the translators of torchvision.transforms' classes and of torchvision.transforms.v2's
  batch.py      batch transforms (the references' RandomMixup / RandomCutmix, v2's MixUp / CutMix) -> batch ops

Nothing is imported here: spec.py imports torchvision only when it is given torchvision transforms.
"""
