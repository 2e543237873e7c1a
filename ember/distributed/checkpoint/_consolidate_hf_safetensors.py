"""Merging sharded DCP safetensors files into full-tensor files (PyTorch's
``_consolidate_hf_safetensors``).

The input files' headers give each shard's shape and, in ``DCP_SHARDING_INFO``, its offsets in
the full tensor; the full shapes are the shards' furthest extents. Each output file gets its
header first (the tensors in mapping order, back to back), then each full tensor is assembled in
a byte buffer from every shard's bytes, copying the longest contiguous runs, and appended; last,
``model.safetensors.index.json`` maps each FQN to its output file. Works on bytes, not tensors,
so no tensor is built; the bytes equal PyTorch's.
"""
import concurrent.futures
import glob
import json
import logging
import math
import os
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from ...safetensors import _DTYPES
from ._hf_utils import (DATA_OFFSETS_KEY, DEFAULT_EXTRA_METADATA_KEY, DTYPE_KEY,
                        SAVED_OFFSETS_KEY, SHAPE_KEY, SUFFIX, _gen_file_name,
                        _get_dcp_custom_metadata, _get_safetensors_file_metadata, _metadata_fn)

logger = logging.getLogger(__name__)


@dataclass
class _FqnData:
    """One tensor of an output file: its byte offset in the data section, full shape, element
    size and safetensors dtype code."""

    offset_in_file: int = 0
    shape_in_file: list = field(default_factory=list)
    dtype_size: int = 0
    dtype_str: str = ""


@dataclass
class _OutputFileData:
    """One output file: its header's size and its tensors."""

    metadata_size: int = 0
    fqn_data: dict = field(default_factory=dict)


@dataclass
class _InputFileData:
    """One input file: its header's size and its parsed header."""

    metadata_size: int = 0
    metadata: Any = None


def _parse_input_metadata(input_files_data, output_files_data):
    """Fill each output tensor's full shape and dtype from the input shards' headers."""
    fqn_to_size_mapping = {}
    for file_data in input_files_data.values():
        safetensors_metadata = file_data.metadata
        dcp_sharding_info = _get_dcp_custom_metadata(safetensors_metadata)
        if not dcp_sharding_info:
            raise ValueError("No DCP custom metadata found in safetensors file. The file must "
                             "be saved with DCP to be consolidated.")
        for key, val in safetensors_metadata.items():
            if key == DEFAULT_EXTRA_METADATA_KEY:
                continue
            sizes = val[SHAPE_KEY]
            offsets = dcp_sharding_info[key][SAVED_OFFSETS_KEY]
            if key not in fqn_to_size_mapping:
                cur_size = [size + offset for size, offset in zip(sizes, offsets)]
                fqn_to_size_mapping[key] = (cur_size, val[DTYPE_KEY])
            else:
                cur_size = fqn_to_size_mapping[key][0]
                for i in range(len(sizes)):
                    cur_size[i] = max(cur_size[i], sizes[i] + offsets[i])

    for fqn, (tensor_size, dtype_str) in fqn_to_size_mapping.items():
        for output_data in output_files_data.values():
            if fqn in output_data.fqn_data:
                # PyTorch sizes elements with finfo, which fails for integer and bool tensors;
                # the dtype's itemsize is the same number for floats and right for the rest
                output_data.fqn_data[fqn] = _FqnData(shape_in_file=tensor_size,
                                                     dtype_size=_DTYPES[dtype_str].itemsize,
                                                     dtype_str=dtype_str)


def _write_metadata(output_files_data):
    """Write each output file's header and record where each tensor's bytes will go."""
    for file_path, output_data in output_files_data.items():
        with open(file_path, "wb") as f:
            metadata = {}
            curr_offset = 0
            for fqn, fqn_data in output_data.fqn_data.items():
                end_offset = curr_offset + math.prod(fqn_data.shape_in_file) * fqn_data.dtype_size
                metadata[fqn] = {SHAPE_KEY: fqn_data.shape_in_file,
                                 DTYPE_KEY: fqn_data.dtype_str,
                                 DATA_OFFSETS_KEY: [curr_offset, end_offset]}
                fqn_data.offset_in_file = curr_offset
                curr_offset = end_offset
            json_bytes = json.dumps(metadata).encode("utf-8")
            f.write(struct.pack("<Q", len(json_bytes)))
            f.write(json_bytes)
            output_data.metadata_size = f.tell()


def _read_tensor_data(f, start_offset, end_offset, metadata_size):
    """The bytes ``[start_offset, end_offset)`` of an open file's data section."""
    f.seek(metadata_size + start_offset)
    return f.read(end_offset - start_offset)


def _process_output_file(output_file, output_data, input_files_data):
    """Assemble and append each full tensor of one output file, in file order."""
    sorted_tensors = sorted(output_data.fqn_data.items(), key=lambda x: x[1].offset_in_file)
    dcp_metadata = {safetensors_file: _get_dcp_custom_metadata(file_data.metadata)
                    for safetensors_file, file_data in input_files_data.items()}
    file_handles = {}
    try:
        for safetensors_file in input_files_data:
            file_handles[safetensors_file] = open(safetensors_file, "rb")  # noqa: SIM115
        with open(output_file, "r+b") as output_stream:
            output_stream.seek(0, os.SEEK_END)
            for tensor_fqn, tensor_fqn_data in sorted_tensors:
                full_tensor_mv = memoryview(bytearray(
                    math.prod(tensor_fqn_data.shape_in_file) * tensor_fqn_data.dtype_size))
                for safetensors_file, file_data in input_files_data.items():
                    if tensor_fqn not in file_data.metadata:
                        continue
                    metadata = file_data.metadata[tensor_fqn]
                    data_offsets = metadata[DATA_OFFSETS_KEY]
                    data_to_write = _read_tensor_data(file_handles[safetensors_file],
                                                      data_offsets[0], data_offsets[1],
                                                      file_data.metadata_size)
                    _write_sub_tensor_to_file_optimized(
                        full_tensor_mv, data_to_write, tensor_fqn_data.dtype_size,
                        tensor_fqn_data.shape_in_file,
                        dcp_metadata[safetensors_file][tensor_fqn][SAVED_OFFSETS_KEY],
                        metadata[SHAPE_KEY])
                output_stream.write(full_tensor_mv)
    finally:
        for f in file_handles.values():
            f.close()


def _write_data(input_files_data, output_files_data, num_threads=1):
    """Fill the output files, ``num_threads`` files at a time."""
    if num_threads <= 1 or len(output_files_data) <= 1:
        for output_file, output_data in output_files_data.items():
            _process_output_file(output_file, output_data, input_files_data)
        return
    with concurrent.futures.ThreadPoolExecutor(
            max_workers=min(num_threads, len(output_files_data))) as executor:
        futures = [executor.submit(_process_output_file, output_file, output_data,
                                   input_files_data)
                   for output_file, output_data in output_files_data.items()]
        for future in concurrent.futures.as_completed(futures):
            future.result()


def _write_sub_tensor_to_file_optimized(full_tensor_mv, sub_tensor_bytes, element_size,
                                        tensor_shape, sub_tensor_offsets, sub_tensor_shape):
    """Copy a shard's row-major bytes to its place in the full tensor's buffer, the longest
    contiguous run at a time (the whole shard for row-wise shards, a row for column-wise)."""
    if not tensor_shape or not sub_tensor_shape:
        return
    tensor_strides = [1]
    for i in range(len(tensor_shape) - 1, 0, -1):
        tensor_strides.insert(0, tensor_strides[0] * tensor_shape[i])
    sub_tensor_strides = [1]
    for i in range(len(sub_tensor_shape) - 1, 0, -1):
        sub_tensor_strides.insert(0, sub_tensor_strides[0] * sub_tensor_shape[i])
    total_elements = math.prod(sub_tensor_shape)

    elements_written = 0
    while elements_written < total_elements:
        temp_idx = elements_written
        indices = []
        for dim_size in reversed(sub_tensor_shape):
            indices.append(temp_idx % dim_size)
            temp_idx //= dim_size
        indices.reverse()
        max_contiguous = _calculate_max_contiguous_elements(indices, sub_tensor_shape,
                                                            tensor_shape)
        src_pos = sum(idx * stride for idx, stride in zip(indices, sub_tensor_strides))
        src_byte_offset = src_pos * element_size
        dest_indices = [idx + offset for idx, offset in zip(indices, sub_tensor_offsets)]
        dest_pos = sum(idx * stride for idx, stride in zip(dest_indices, tensor_strides))
        dest_byte_offset = dest_pos * element_size
        bytes_to_write = max_contiguous * element_size
        full_tensor_mv[dest_byte_offset:dest_byte_offset + bytes_to_write] = \
            sub_tensor_bytes[src_byte_offset:src_byte_offset + bytes_to_write]
        elements_written += max_contiguous


def _calculate_max_contiguous_elements(indices, sub_tensor_shape, tensor_shape):
    """How many elements from ``indices`` on are contiguous in both the shard and the full
    tensor: the rest of the row, whole rows when the shard spans the full width, whole 2-D
    slices when it spans the last two dimensions."""
    if not indices or not sub_tensor_shape or not tensor_shape:
        raise ValueError("Input lists cannot be empty")
    if not (len(indices) == len(sub_tensor_shape) == len(tensor_shape)):
        raise ValueError(f"All input lists must have the same length. Got indices: "
                         f"{len(indices)}, sub_tensor_shape: {len(sub_tensor_shape)}, "
                         f"tensor_shape: {len(tensor_shape)}")
    for i, (idx, sub_dim) in enumerate(zip(indices, sub_tensor_shape)):
        if idx >= sub_dim:
            raise ValueError(f"Index {idx} at dimension {i} is out of bounds for sub-tensor "
                             f"shape {sub_tensor_shape}")
    for i, (sub_dim, tensor_dim) in enumerate(zip(sub_tensor_shape, tensor_shape)):
        if sub_dim > tensor_dim:
            raise ValueError(f"Sub-tensor dimension {sub_dim} at position {i} exceeds tensor "
                             f"dimension {tensor_dim}")

    max_contiguous = sub_tensor_shape[-1] - indices[-1]
    if len(sub_tensor_shape) >= 2 and indices[-1] == 0:
        rows_remaining = sub_tensor_shape[-2] - indices[-2]
        if sub_tensor_shape[-1] == tensor_shape[-1]:
            max_contiguous = rows_remaining * sub_tensor_shape[-1]
        if len(sub_tensor_shape) >= 3 and indices[-2] == 0:
            remaining_in_dim = sub_tensor_shape[-3] - indices[-3]
            if (sub_tensor_shape[-1] == tensor_shape[-1]
                    and sub_tensor_shape[-2] == tensor_shape[-2]):
                max_contiguous = remaining_in_dim * sub_tensor_shape[-2] * sub_tensor_shape[-1]
    return max_contiguous


def _write_overall_metadata_file(output_dir, output_files_data):
    """``model.safetensors.index.json``: the total bytes and each FQN's output file."""
    total_size = 0
    weight_map = {}
    for output_path, value in output_files_data.items():
        for fqn, fqn_data in value.fqn_data.items():
            total_size += math.prod(fqn_data.shape_in_file) * fqn_data.dtype_size
            weight_map[fqn] = os.path.basename(output_path)
    metadata_to_write = {"metadata": {"total_size": total_size}, "weight_map": weight_map}
    with open(os.path.join(output_dir, _metadata_fn), "w") as metadata_file:
        json.dump(metadata_to_write, metadata_file, indent=2)


def _consolidate_safetensors_files(input_dir, output_dir, fqn_to_file_mapping, num_threads):
    output_files_data = {}
    for fqn, filename in fqn_to_file_mapping.items():
        output_path = os.path.join(output_dir, filename)
        output_files_data.setdefault(output_path, _OutputFileData()).fqn_data[fqn] = _FqnData()

    input_files_data = {}
    for safetensor_file in glob.glob(os.path.join(input_dir, f"*{SUFFIX}")):
        with open(safetensor_file, "rb") as f:
            metadata, size = _get_safetensors_file_metadata(f)
        input_files_data[safetensor_file] = _InputFileData(metadata_size=size, metadata=metadata)

    _parse_input_metadata(input_files_data, output_files_data)
    _write_metadata(output_files_data)
    _write_data(input_files_data, output_files_data, num_threads)
    return output_files_data


def consolidate_safetensors_files(input_dir, output_dir, fqn_to_index_mapping, num_threads=1):
    """
    Consolidate the sharded safetensors files of ``input_dir`` into full-tensor files
    ``model-0000i-of-0000n.safetensors`` in ``output_dir`` (``fqn_to_index_mapping`` maps each
    FQN to its file index, from 1), plus ``model.safetensors.index.json``. ``num_threads``
    output files are written at a time.
    """
    start_time = time.time()
    logger.info("Consolidating safetensors files from %s to %s. Beginning at time %f",
                input_dir, output_dir, start_time)
    max_index = max(fqn_to_index_mapping.values())
    fqn_to_file_mapping = {fqn: _gen_file_name(idx, max_index)
                           for fqn, idx in fqn_to_index_mapping.items()}
    output_files_data = _consolidate_safetensors_files(input_dir, output_dir,
                                                       fqn_to_file_mapping, num_threads)
    _write_overall_metadata_file(output_dir, output_files_data)
    logger.info("Done consolidating. Took %.2f secs.", time.time() - start_time)


def consolidate_safetensors_files_on_every_rank(input_dir, output_dir, fqn_to_index_mapping,
                                                num_threads=1, process_group=None):
    """
    Consolidate as :func:`consolidate_safetensors_files`, each rank writing the output files
    whose index modulo the world size is its rank; rank 0 gathers what every rank wrote and
    writes ``model.safetensors.index.json``. Without an initialized process group this
    process writes every output file and, as in PyTorch, no index file.
    """
    from .. import distributed_c10d as dist
    start_time = time.time()
    if dist.is_available() and dist.is_initialized():
        rank = dist.get_rank(group=process_group)
        world_size = dist.get_world_size(group=process_group)
    else:
        rank = 0
        world_size = 1
        logger.warning("Distributed environment not initialized. Running in single process "
                       "mode.")
    logger.info("Rank %d/%d: Consolidating safetensors files from %s to %s",
                rank, world_size, input_dir, output_dir)

    unique_indices = set(fqn_to_index_mapping.values())
    indices_for_this_rank = [idx for idx in unique_indices if idx % world_size == rank]
    logger.info("Rank %d: Assigned %d output files out of %d total files",
                rank, len(indices_for_this_rank), len(unique_indices))
    filtered_mapping = {fqn: idx for fqn, idx in fqn_to_index_mapping.items()
                        if idx in indices_for_this_rank}

    output_files_data = {}
    if filtered_mapping:
        max_index = max(unique_indices)
        output_files_data = _consolidate_safetensors_files(
            input_dir=input_dir, output_dir=output_dir,
            fqn_to_file_mapping={fqn: _gen_file_name(idx, max_index)
                                 for fqn, idx in filtered_mapping.items()},
            num_threads=num_threads)
    logger.info("Rank %d: Done consolidating. Processed %d unique indices in %.2f secs.",
                rank, len(indices_for_this_rank), time.time() - start_time)

    if dist.is_available() and dist.is_initialized():
        gathered_output_files_data = [{} for _ in range(world_size)] if rank == 0 else None
        dist.gather_object(output_files_data, gathered_output_files_data, dst=0,
                           group=process_group)
        if rank == 0:
            all_output_files_data = {}
            for rank_data in gathered_output_files_data:
                all_output_files_data.update(rank_data)
            _write_overall_metadata_file(output_dir, all_output_files_data)
            logger.info("Rank 0: Wrote overall metadata file.")
            logger.info("Total time taken: %.2f secs.", time.time() - start_time)
        dist.barrier(group=process_group)
