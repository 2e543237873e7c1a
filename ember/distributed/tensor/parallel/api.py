"""``parallelize_module``: apply a ``ParallelStyle``, or a plan of them keyed by submodule
names (each dotted part an fnmatch pattern over the children's names), to a module."""
import warnings
from fnmatch import fnmatch

from ...device_mesh import _mesh_resources
from .style import ParallelStyle

__all__ = ["parallelize_module"]


def parallelize_module(module, device_mesh=None, parallelize_plan=None, *, src_data_rank=0):
    """Parallelize ``module`` (or the submodules the plan names) on the 1-D ``device_mesh`` (or
    the current mesh). ``src_data_rank``: the group rank whose parameters are the source of
    truth (``None``: every rank keeps its own, no communication). Returns ``module``."""
    device_mesh = device_mesh or _mesh_resources.get_current_mesh()
    if parallelize_plan is None:
        warnings.warn("No parallelize_plan is provided and auto-parallel is not supported at the "
                      "moment, so this parallelize_module call will do nothing.", stacklevel=2)
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        parallelize_plan.src_data_rank = src_data_rank
        return parallelize_plan._apply(module, device_mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError(f"Expect Union[ParallelStyle, Dict[str, ParallelStyle]] for "
                        f"parallelize_plan, {type(parallelize_plan)} found!")
    for module_path, parallelize_style in parallelize_plan.items():
        if module_path == "":
            # PyTorch applies the empty path's style with the default src_data_rank
            parallelize_module(module, device_mesh, parallelize_style)
            continue
        path_splits = module_path.split(".")
        token = path_splits[0]
        matched_children = [(name, child) for name, child in module.named_children()
                            if fnmatch(name, token)]
        if not matched_children:
            warnings.warn(f"Parallelize plan key '{module_path}' could not be resolved: no "
                          f"submodule matching token '{token}' in module {module}, skipping "
                          f"this plan entry.", stacklevel=2)
            continue
        rest = ".".join(path_splits[1:])
        for _, submodule in matched_children:
            parallelize_module(submodule, device_mesh,
                               {rest: parallelize_style} if rest else parallelize_style,
                               src_data_rank=src_data_rank)
    return module
