"""``Directory``: a package's files as a tree (``PackageImporter.file_structure()``), printed
as PyTorch prints it."""
from .glob_group import GlobGroup

__all__ = ["Directory"]


class Directory:
    """A folder (``is_dir``) or file of a package, its contents in ``children`` by name."""

    def __init__(self, name, is_dir):
        self.name = name
        self.is_dir = is_dir
        self.children = {}

    def _get_dir(self, dirs):
        if len(dirs) == 0:
            return self
        if dirs[0] not in self.children:
            self.children[dirs[0]] = Directory(dirs[0], True)
        return self.children[dirs[0]]._get_dir(dirs[1:])

    def _add_file(self, file_path):
        *dirs, file = file_path.split("/")
        self._get_dir(dirs).children[file] = Directory(file, False)

    def has_file(self, filename):
        """Whether ``filename`` (a path from this folder, ``"a/b.py"``) is in the tree."""
        child, _, grandchildren = filename.partition("/")
        if child not in self.children:
            return False
        return not grandchildren or self.children[child].has_file(grandchildren)

    def __str__(self):
        str_list = []
        self._stringify_tree(str_list)
        return "".join(str_list)

    def _stringify_tree(self, str_list, preamble="", dir_ptr="─── "):
        space, branch, tee, last = "    ", "│   ", "├── ", "└── "
        str_list.append(f"{preamble}{dir_ptr}{self.name}\n")
        preamble = preamble + (branch if dir_ptr == tee else space)
        dir_keys = sorted(k for k, v in self.children.items() if v.is_dir)
        file_keys = sorted(k for k, v in self.children.items() if not v.is_dir)
        for index, key in enumerate(dir_keys):
            pointer = last if index == len(dir_keys) - 1 and not file_keys else tee
            self.children[key]._stringify_tree(str_list, preamble, pointer)
        for index, file in enumerate(file_keys):
            pointer = last if index == len(file_keys) - 1 else tee
            str_list.append(f"{preamble}{pointer}{file}\n")


def _create_directory_from_file_list(filename, file_list, include="**", exclude=()):
    glob_pattern = GlobGroup(include, exclude=exclude, separator="/")
    top_dir = Directory(filename, True)
    for file in file_list:
        if glob_pattern.matches(file):
            top_dir._add_file(file)
    return top_dir
