"""``torch.utils.data.datapipes.dataframe``: the DataFrame wrapper the datapipes use
(``dataframe_wrapper``) and ``DFIterDataPipe``. PyTorch's DataFrame-tracing prototype
(``CaptureDataFrame``, ``DataFramesAsTuplesPipe`` and the ``trace_as_dataframe`` /
``_dataframes_*`` / ``_to_dataframes_pipe`` functional forms) is not in ember."""
from ..datapipe import DFIterDataPipe
from . import dataframe_wrapper

__all__ = ["DFIterDataPipe", "dataframe_wrapper"]
