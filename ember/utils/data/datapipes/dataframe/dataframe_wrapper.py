"""The DataFrame operations datapipes use, through a replaceable wrapper class (pandas by
default, imported on first use; ``set_df_wrapper`` installs another)."""
_pandas = None
_WITH_PANDAS = None


def _try_import_pandas() -> bool:
    try:
        import pandas
    except ImportError:
        return False
    global _pandas
    _pandas = pandas
    return True


def _with_pandas() -> bool:
    global _WITH_PANDAS
    if _WITH_PANDAS is None:
        _WITH_PANDAS = _try_import_pandas()
    return _WITH_PANDAS


def _need_pandas():
    if not _with_pandas():
        raise RuntimeError("DataFrames prototype requires pandas to function")


class PandasWrapper:
    @classmethod
    def create_dataframe(cls, data, columns):
        _need_pandas()
        return _pandas.DataFrame(data, columns=columns)

    @classmethod
    def is_dataframe(cls, data):
        return _with_pandas() and isinstance(data, _pandas.core.frame.DataFrame)

    @classmethod
    def is_column(cls, data):
        return _with_pandas() and isinstance(data, _pandas.core.series.Series)

    @classmethod
    def iterate(cls, data):
        _need_pandas()
        yield from data.itertuples(index=False)

    @classmethod
    def concat(cls, buffer):
        _need_pandas()
        return _pandas.concat(buffer)

    @classmethod
    def get_item(cls, data, idx):
        _need_pandas()
        return data[idx: idx + 1]

    @classmethod
    def get_len(cls, df):
        _need_pandas()
        return len(df.index)

    @classmethod
    def get_columns(cls, df):
        _need_pandas()
        return list(df.columns.values.tolist())


default_wrapper = PandasWrapper


def get_df_wrapper():
    return default_wrapper


def set_df_wrapper(wrapper):
    global default_wrapper
    default_wrapper = wrapper


def create_dataframe(data, columns=None):
    return get_df_wrapper().create_dataframe(data, columns)


def is_dataframe(data):
    return get_df_wrapper().is_dataframe(data)


def get_columns(data):
    return get_df_wrapper().get_columns(data)


def is_column(data):
    return get_df_wrapper().is_column(data)


def concat(buffer):
    return get_df_wrapper().concat(buffer)


def iterate(data):
    return get_df_wrapper().iterate(data)


def get_item(data, idx):
    return get_df_wrapper().get_item(data, idx)


def get_len(df):
    return get_df_wrapper().get_len(df)
