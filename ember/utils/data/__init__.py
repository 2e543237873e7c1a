"""``ember.utils.data``: datasets, samplers, the DataLoader, and DataPipes."""
from .collate import default_collate, default_convert  # noqa: F401
from .dataloader import DataLoader, _DatasetKind, get_worker_info  # noqa: F401
from .datapipes._decorator import (argument_validation, functional_datapipe,  # noqa: F401
                                   guaranteed_datapipes_determinism, non_deterministic,
                                   runtime_validation, runtime_validation_disabled)
from .datapipes.datapipe import DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe  # noqa: F401
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset,  # noqa: F401
                      StackDataset, Subset, TensorDataset, random_split)
from .distributed import DistributedSampler  # noqa: F401
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,  # noqa: F401
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DFIterDataPipe", "DataChunk",
           "DataLoader", "Dataset", "DistributedSampler", "IterDataPipe", "IterableDataset",
           "MapDataPipe", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
           "_DatasetKind", "argument_validation", "default_collate", "default_convert",
           "functional_datapipe", "get_worker_info", "guaranteed_datapipes_determinism",
           "non_deterministic", "random_split", "runtime_validation",
           "runtime_validation_disabled"]
