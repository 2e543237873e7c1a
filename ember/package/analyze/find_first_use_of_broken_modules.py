"""``find_first_use_of_broken_modules``: where each module a PackagingError lists is first
needed."""
from ..package_exporter import PackagingError

__all__ = ["find_first_use_of_broken_modules"]


def find_first_use_of_broken_modules(exc):
    """``{broken module: a dependency path leading to it}`` for the modules of ``exc``."""
    if not isinstance(exc, PackagingError):
        raise AssertionError(f"exception must be a PackagingError, got {type(exc).__name__}")
    return {module_name: exc.dependency_graph.first_path(module_name)
            for module_name, attr in exc.dependency_graph.nodes.items()
            if attr.get("error", False)}
