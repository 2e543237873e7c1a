"""``torch.utils.data.datapipes``: composable data-loading pipelines — ``iter`` (streams),
``map`` (keyed) and ``dataframe`` (the DataFrame wrapper)."""
from . import dataframe as dataframe
from . import iter as iter
from . import map as map

__all__ = ["dataframe", "iter", "map"]
