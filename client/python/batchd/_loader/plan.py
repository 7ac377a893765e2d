"""The part of batchd.Loader that says what its stream is, before any batch: the ranks in use, the daemon's dry run of
the stream (len(), .spec), the epoch of the next pass, and DataLoader's attributes that cannot be set after
construction. A mixin of Loader (loader.py); it uses the Loader's _options, _given_ranks, _ranks, _client,
_plan_info, _index_timeout and _close_stream()."""
from .dataloader_checks import refuse_reassign
from .._own.iterable import is_iterable, iterable_len
from .support import _rank_and_world_size, _while_indexing


class LoaderPlan:
    def __setattr__(self, attr, value):
        refuse_reassign(self, attr)
        super().__setattr__(attr, value)

    @property
    def drop_last(self):
        return self._options["drop_last_batch"]  # DataLoader's (the sampler's is .sampler.drop_last)

    @property
    def rank(self):
        return self._resolve_ranks()[0]

    @property
    def world_size(self):
        return self._resolve_ranks()[1]

    def _resolve_ranks(self):
        """(rank, world_size) now: the given ones, else torch.distributed's. A change since the last plan (the
        process group appeared after the Loader was built) drops the plan and the stream: they are made again."""
        ranks = _rank_and_world_size(*self._given_ranks)
        if ranks != self._ranks:
            if self._ranks is not None:
                self._close_stream()
                self._plan_info = None
            self._ranks = ranks
        return ranks

    def set_epoch(self, epoch):
        """Use `epoch` for the next pass (as DistributedSampler.set_epoch)."""
        self._epoch = int(epoch)
        self._explicit_epoch = True

    def __len__(self):
        """Batches per epoch for this rank, as len(DataLoader); with your sampler run here, len() of the batch
        sampler (of the sampler without auto-collation), TypeError if it has none, as DataLoader; an IterableDataset's
        from its len(), as DataLoader (_own/iterable.py)."""
        if self._fed:
            return iterable_len(self) if is_iterable(self.dataset) else len(self._index_sampler)
        return self._plan()["batches_per_epoch"]

    def _stream_options(self):
        """The stream's options with the ranks in use now."""
        rank, world_size = self._resolve_ranks()
        return dict(self._options, rank=rank, world_size=world_size)

    def _plan(self):
        """The daemon's dry run of this loader's stream (sizes, the depth it would get), once per ranks."""
        options = self._stream_options()
        if self._plan_info is None:
            self._plan_info = _while_indexing(lambda: self._client.plan_stream(**options), self._index_timeout)
        return self._plan_info

    @property
    def spec(self):
        """The stream's pipeline as the daemon runs it, from its dry run: {"ops": [...], "batch_ops": [...]} in
        canonical form (every parameter with its default, keys sorted, numbers as floats; the source op first:
        decode, idx_image or token_window).
        The presets are specs too: fmnist is [idx_image, to_tensor, normalize], fmnist_u8 [idx_image,
        pil_to_tensor], lm [token_window] with its seq_len resolved (docs/operations.md, "Pipelines")."""
        return self._plan()["spec"]
