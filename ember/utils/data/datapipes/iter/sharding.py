"""``ShardingFilter`` (``sharding_filter``): after ``apply_sharding(n, i)`` keeps every
``n``-th element starting at ``i``. Sharding groups (``SHARDING_PRIORITIES``) compose:
distributed ranks and DataLoader workers each shard, and the instance id is mixed-radix over
the groups in priority order."""
from collections.abc import Sized
from enum import IntEnum

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe

__all__ = ["SHARDING_PRIORITIES", "ShardingFilterIterDataPipe"]


class SHARDING_PRIORITIES(IntEnum):
    DEFAULT = 1
    DISTRIBUTED = 2
    MULTIPROCESSING = 3


class _ShardingIterDataPipe(IterDataPipe):
    def apply_sharding(self, num_of_instances: int, instance_id: int,
                       sharding_group: SHARDING_PRIORITIES):
        raise NotImplementedError


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(_ShardingIterDataPipe):
    """Lets the DataLoader (or ``graph_settings.apply_sharding``) shard the pipeline here
    (functional name: ``sharding_filter``). ``sharding_group_filter``: honour only that
    group."""

    def __init__(self, source_datapipe: IterDataPipe, sharding_group_filter=None):
        super().__init__()
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.groups: dict[int, tuple[int, int]] = {}
        self.num_of_instances = 1
        self.instance_id = 0
        self._update_num_of_instances()

    def apply_sharding(self, num_of_instances, instance_id,
                       sharding_group=SHARDING_PRIORITIES.DEFAULT):
        if instance_id >= num_of_instances:
            raise ValueError(f"instance_id({instance_id}) should be smaller than "
                             f"num_of_instances({num_of_instances})")
        if sharding_group == SHARDING_PRIORITIES.DEFAULT:
            if len(self.groups) and SHARDING_PRIORITIES.DEFAULT not in self.groups:
                raise RuntimeError("ShardingFilter cannot mix DEFAULT and non DEFAULT groups")
        elif SHARDING_PRIORITIES.DEFAULT in self.groups:
            raise RuntimeError("ShardingFilter cannot mix DEFAULT and non DEFAULT groups")
        self.groups[sharding_group] = (num_of_instances, instance_id)
        self._update_num_of_instances()

    def _update_num_of_instances(self):
        sorted_sharding_groups = [self.groups[key] for key in sorted(self.groups.keys())
                                  if self.sharding_group_filter is None
                                  or key == self.sharding_group_filter]
        sorted_sharding_groups.reverse()
        self.num_of_instances = 1
        self.instance_id = 0
        for group_num_of_instances, group_instance_id in sorted_sharding_groups:
            self.instance_id += self.num_of_instances * group_instance_id
            self.num_of_instances *= group_num_of_instances

    def __iter__(self):
        for i, item in enumerate(self.source_datapipe):
            if i % self.num_of_instances == self.instance_id:
                yield item

    def __len__(self):
        if isinstance(self.source_datapipe, Sized):
            n = len(self.source_datapipe)
            return (n // self.num_of_instances
                    + (1 if self.instance_id < n % self.num_of_instances else 0))
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
