"""The names, header keys and header reader shared by the HuggingFace storage and the
consolidation (PyTorch's ``_hf_utils``).

A DCP safetensors file keeps, in its header's ``__metadata__``, ``DCP_SHARDING_INFO``: a JSON
string mapping each tensor's FQN to ``{"saved_offsets": [...]}``, where its chunk starts in the
full tensor; files without it (plain HuggingFace checkpoints) hold full tensors.
"""
import json
import struct
from dataclasses import dataclass

from ..._core.dtype import dtype
from ..._core.size import Size

_metadata_fn = "model.safetensors.index.json"

FILE_NAME = "model-{cpt_idx}-of-{num_files}"
SHARDED_FILE_NAME = "shard-{shard_idx}-model-{cpt_idx}-of-{num_files}"
SUFFIX = ".safetensors"

# metadata keys
CUSTOM_METADATA_KEY = "DCP_SHARDING_INFO"
DEFAULT_EXTRA_METADATA_KEY = "__metadata__"
SAVED_OFFSETS_KEY = "saved_offsets"
SHAPE_KEY = "shape"
DATA_KEY = "data"
DTYPE_KEY = "dtype"
DATA_OFFSETS_KEY = "data_offsets"

HF_DCP_VERSION = 1.0
DCP_VERSION_KEY = "DCP_VERSION"
DCP_SHARDING_INFO_KEY = "DCP_SHARDING_INFO"

FORMAT_KEY = "format"
FORMAT_VALUE = "pt"

NUM_BYTES_FOR_HEADER_LEN = 8

SHARDED_DIR_NAME = "sharded"


@dataclass
class _HFStorageInfo:
    """This is the per entry storage info."""

    relative_path: str
    shape: Size
    dtype: dtype


def _gen_file_name(index, largest_index, shard_index=None):
    """``model-0000i-of-0000n.safetensors``, or with a shard (the saving rank, from 1)
    ``shard-0000s-model-0000i-of-0000n.safetensors``."""
    if shard_index is not None:
        return SHARDED_FILE_NAME.format(shard_idx=f"{shard_index}".zfill(5),
                                        cpt_idx=f"{index}".zfill(5),
                                        num_files=f"{largest_index}".zfill(5)) + SUFFIX
    return FILE_NAME.format(cpt_idx=f"{index}".zfill(5),
                            num_files=f"{largest_index}".zfill(5)) + SUFFIX


def _get_safetensors_file_metadata(file_bytes):
    """The header of an open safetensors file (read from its start) and the byte offset where
    its tensor data begins."""
    header_len_bytes = file_bytes.read(NUM_BYTES_FOR_HEADER_LEN)
    header_len = struct.unpack("<Q", header_len_bytes)[0]
    header_json = file_bytes.read(header_len)
    metadata = json.loads(header_json)
    return (metadata, header_len + NUM_BYTES_FOR_HEADER_LEN)


def _get_dcp_custom_metadata(metadata):
    """The decoded ``DCP_SHARDING_INFO`` of a header, or None."""
    if DEFAULT_EXTRA_METADATA_KEY in metadata:
        custom_metadata = metadata[DEFAULT_EXTRA_METADATA_KEY]
        if CUSTOM_METADATA_KEY in custom_metadata:
            return json.loads(custom_metadata[CUSTOM_METADATA_KEY])
    return None
