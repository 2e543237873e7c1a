"""PyTorch's generic join context manager (``torch.distributed.algorithms.join``): training
with uneven inputs. Every iteration a rank that still has inputs all-reduces a one
(``Join.notify_join_context``, called by the first ``Joinable`` before its collectives); a rank
that has run out loops in ``Join.__exit__``, all-reducing a zero to count the ranks still
running and calling each ``JoinHook.main_hook`` to shadow their collectives, until the count is
zero; then every rank runs the ``post_hook``s. With ``throw_on_early_termination`` the first
rank to run out makes every rank raise instead.
"""
import warnings
from abc import ABC, abstractmethod
from typing import NamedTuple

import ember
import ember.distributed as dist

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """The two entry points a ``Joinable`` gives the join context manager: ``main_hook`` (run
    once per iteration of the ranks still running, shadowing their collectives) and
    ``post_hook`` (run once every rank has joined)."""

    def main_hook(self):
        """Shadow the collectives of one training iteration of the ranks still running."""

    def post_hook(self, is_last_joiner):
        """Run after every rank has joined; ``is_last_joiner``: this rank was among the last."""


class Joinable(ABC):
    """A class taking part in ``Join``: it gives a ``join_hook``, the ``join_device`` and
    ``join_process_group`` the context manager's own all-reduces use, and calls
    ``Join.notify_join_context(self)`` before its per-iteration collectives."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs):
        """A ``JoinHook`` for this object (``kwargs``: those given to ``Join``)."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join context manager's collectives."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group of the join context manager's collectives."""


class _JoinConfig(NamedTuple):
    """What a ``Joinable`` needs to know of the join context manager it is in."""
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False,
                           is_first_joinable=False)


class Join:
    """The join context manager over ``joinables`` (their hooks run in that order; they must
    share one process group; the first one's device is used). ``enable=False`` turns it off;
    ``throw_on_early_termination=True`` makes every rank raise once one rank runs out of
    inputs."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [joinable.join_hook(**kwargs) for joinable in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self):
        is_first_joinable = True
        for joinable in self._joinables:
            joinable._join_config = _JoinConfig(
                enable=self._enable, throw_on_early_termination=self._throw_on_early_termination,
                is_first_joinable=is_first_joinable)
            is_first_joinable = False

    def _extract_dist_info(self):
        process_group = device = None
        for joinable in self._joinables:
            if process_group is None:
                process_group = joinable.join_process_group
            elif process_group != joinable.join_process_group:
                raise ValueError("Using join context manager with multiple process groups")
            if device is None:
                device = joinable.join_device
        self._process_group = process_group
        self._rank = dist.get_rank(self._process_group)
        self._device = device

    def __enter__(self):
        ...

    def __exit__(self, type, value, traceback):
        """Shadow the running ranks' iterations until every rank has joined, then run the
        post-hooks (an exception raised in the block propagates at once)."""
        if not self._enable or type:
            return
        all_procs_joined = False
        is_last_joiner = True
        i = 0
        WARN_THRESHOLD = 1000
        warnings.simplefilter("once")
        while not all_procs_joined:
            if i > WARN_THRESHOLD:
                warnings.warn(f"Detected uneven input skew of greater than {WARN_THRESHOLD}. "
                              f"This means that rank {self._rank} has at least "
                              f"{WARN_THRESHOLD} fewer inputs than other currently-active "
                              f"ranks. This level of skew could lead to performance "
                              f"degradation during training.", stacklevel=2)
            if self._get_num_nonjoined_procs() == 0:
                all_procs_joined = True
            else:
                if self._throw_on_early_termination:
                    self._notify_procs_to_terminate()
                for join_hook in self._join_hooks:
                    join_hook.main_hook()
                is_last_joiner = False
                i += 1
        for join_hook in self._join_hooks:
            join_hook.post_hook(is_last_joiner)

    def _get_num_nonjoined_procs(self):
        """The number of ranks still running (this rank's zero matches their ones)."""
        num_nonjoined_procs = ember.zeros(1, device=self._device)
        dist.all_reduce(num_nonjoined_procs, group=self._process_group)
        return num_nonjoined_procs.item()

    def _notify_procs_to_terminate(self):
        ones = ember.ones(1, device=self._device)
        dist.all_reduce(ones, group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable):
        """Tell the join context manager that this rank has not joined (only the first
        joinable communicates): the async all-reduce's ``Work``, or None. With
        ``throw_on_early_termination``, raise if some rank has run out of inputs."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the "
                                 f"``Joinable`` constructor")
        join_config = joinable._join_config
        if not join_config.is_first_joinable or not join_config.enable:
            return None
        device = joinable.join_device
        process_group = joinable.join_process_group
        ones = ember.ones(1, device=device)
        work = dist.all_reduce(ones, group=process_group, async_op=True)
        if join_config.throw_on_early_termination:
            zeros = ember.zeros(1, device=device)
            dist.all_reduce(zeros, group=process_group)
            if zeros.item():
                work.wait()  # MPI writes into the all-reduce's buffer until it completes
                raise RuntimeError("Detected at least one rank that exhausted inputs. "
                                   "Throwing across all ranks.")
        return work
