"""The save plans' deduplication (PyTorch's ``_dedup_save_plans``): a write that several ranks
plan (a replicated tensor or value, or the same replica of a DTensor's shard) is kept on one
rank only."""
import dataclasses
from collections import defaultdict

__all__ = ["dedup_save_plans"]


def dedup_save_plans(all_plans, save_to_lowest_rank=False):
    """Each write that several plans hold is kept in one plan only: the one with the fewest
    bytes planned so far (or the lowest rank). The plans given are not modified."""
    plan_indices = defaultdict(set)
    items_by_index = {}
    kept = [{item.index for item in plan.items} for plan in all_plans]
    for plan_idx, plan in enumerate(all_plans):
        for item in plan.items:
            plan_indices[item.index].add(plan_idx)
            items_by_index[item.index] = item
    plan_size = [0] * len(all_plans)
    for index, holders in plan_indices.items():
        if save_to_lowest_rank:
            chosen = min(holders)
        else:
            chosen = min(holders, key=lambda i: plan_size[i])
        # a non-tensor's storage size is unknown: count it as one byte
        plan_size[chosen] += items_by_index[index].tensor_storage_size() or 1
        for other in holders - {chosen}:
            kept[other].discard(index)
    return [dataclasses.replace(plan, items=[i for i in plan.items if i.index in keep])
            for plan, keep in zip(all_plans, kept)]
