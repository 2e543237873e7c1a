"""The modules a source file imports (``import a.b``, ``from . import c``, ``__import__``
calls with constant arguments), as ``(module, name-or-None)`` pairs."""
import ast

from ._importlib import _resolve_name


class _ExtractModuleReferences(ast.NodeVisitor):
    """Collects the module references of one source file, relative imports resolved against
    ``package``."""

    @classmethod
    def run(cls, src, package):
        visitor = cls(package)
        visitor.visit(ast.parse(src))
        return list(visitor.references.keys())

    def __init__(self, package):
        super().__init__()
        self.package = package
        self.references = {}

    def _absmodule(self, module_name, level):
        if level > 0:
            return _resolve_name(module_name, self.package, level)
        return module_name

    def visit_Import(self, node):
        for alias in node.names:
            self.references[(alias.name, None)] = True

    def visit_ImportFrom(self, node):
        name = self._absmodule(node.module, 0 if node.level is None else node.level)
        for alias in node.names:
            # "from a import b" may mean module a.b; the exporter checks which
            self.references[(name, None if alias.name == "*" else alias.name)] = True

    def visit_Call(self, node):
        if getattr(node.func, "id", None) != "__import__":
            return self.generic_visit(node)
        try:
            name = node.args[0].value
            keywords = {k.arg: k.value for k in node.keywords}
            fromlist_node = node.args[3] if len(node.args) > 3 else keywords.get("fromlist")
            fromlist = [v.value for v in fromlist_node.elts] if fromlist_node else []
            level_node = node.args[4] if len(node.args) > 4 else keywords.get("level")
            level = level_node.value if level_node is not None else 0
            if not fromlist:
                self.references[(name, None)] = True
                top_name = name.rsplit(".", maxsplit=1)[0]
                if top_name != name:
                    self.references[(self._absmodule(top_name, level), None)] = True
            else:
                name = self._absmodule(name, level)
                for alias in fromlist:
                    self.references[(name, None if alias == "*" else alias)] = True
        except Exception:  # a call whose arguments are not constants: not a dependency we know
            return


find_files_source_depends_on = _ExtractModuleReferences.run
