"""``python -m ember.utils.show_pickle FILE``: print what a pickle holds without importing
anything it names (classes and persistent ids are shown as stand-ins), for a pickle file or a
member of a zip archive (``model.pt@archive/data.pkl``, ``model.pt@*/data.pkl``); as
``torch.utils.show_pickle``."""
import fnmatch
import pickle
import pprint
import struct
import sys
import zipfile

__all__ = ["FakeObject", "FakeClass", "DumpUnpickler", "main"]


class FakeObject:
    """An object of a class the pickle names: its module, name, arguments and state."""

    def __init__(self, module, name, args):
        self.module = module
        self.name = name
        self.args = args
        self.state = None  # (state never set and state set to None look the same)

    def __repr__(self):
        state_str = "" if self.state is None else f"(state={self.state!r})"
        return f"{self.module}.{self.name}{self.args!r}{state_str}"

    def __setstate__(self, state):
        self.state = state

    @staticmethod
    def pp_format(printer, obj, stream, indent, allowance, context, level):
        """pprint's formatter for a FakeObject (installed by ``__main__``)."""
        if not obj.args and obj.state is None:
            stream.write(repr(obj))
            return
        if obj.state is None:
            stream.write(f"{obj.module}.{obj.name}")
            printer._format(obj.args, stream, indent + 1, allowance + 1, context, level)
            return
        if not obj.args:
            stream.write(f"{obj.module}.{obj.name}()(state=\n")
            indent += printer._indent_per_level
            stream.write(" " * indent)
            printer._format(obj.state, stream, indent, allowance + 1, context, level + 1)
            stream.write(")")
            return
        raise Exception("Need to implement")


class FakeClass:
    """A class the pickle names: calling it (or its ``__new__``) makes a FakeObject."""

    def __init__(self, module, name):
        self.module = module
        self.name = name
        self.__new__ = self.fake_new

    def __repr__(self):
        return f"{self.module}.{self.name}"

    def __call__(self, *args):
        return FakeObject(self.module, self.name, args)

    def fake_new(self, *args):
        return FakeObject(self.module, self.name, args[1:])


class DumpUnpickler(pickle._Unpickler):
    """An unpickler that imports nothing: globals are FakeClasses, persistent ids
    ``pers.obj(id)`` objects."""

    def __init__(self, file, *, catch_invalid_utf8=False, **kwargs):
        super().__init__(file, **kwargs)
        self.catch_invalid_utf8 = catch_invalid_utf8

    def find_class(self, module, name):
        return FakeClass(module, name)

    def persistent_load(self, pid):
        return FakeObject("pers", "obj", (pid,))

    dispatch = dict(pickle._Unpickler.dispatch)

    # TorchScript's custom objects may pickle invalid UTF-8: with catch_invalid_utf8 such a
    # string is shown as a stand-in instead of failing
    def load_binunicode(self):
        strlen, = struct.unpack("<I", self.read(4))
        if strlen > sys.maxsize:
            raise Exception("String too long.")
        str_bytes = self.read(strlen)
        try:
            obj = str(str_bytes, "utf-8", "surrogatepass")
        except UnicodeDecodeError as exn:
            if not self.catch_invalid_utf8:
                raise
            obj = FakeObject("builtin", "UnicodeDecodeError", (str(exn),))
        self.append(obj)

    dispatch[pickle.BINUNICODE[0]] = load_binunicode

    @classmethod
    def dump(cls, in_stream, out_stream):
        value = cls(in_stream).load()
        pprint.pprint(value, stream=out_stream)
        return value


def main(argv, output_stream=None):
    """Print the pickle ``argv[1]`` names (a file, ``zip@member`` or ``zip@glob``, the first
    matching member) to ``output_stream`` (stdout when None)."""
    if len(argv) != 2:
        if output_stream is not None:  # (no usage text on stderr when not printing to stdout)
            raise Exception("Pass argv of length 2.")
        sys.stderr.write("usage: show_pickle PICKLE_FILE\n")
        sys.stderr.write("  PICKLE_FILE can be any of:\n")
        sys.stderr.write("    path to a pickle file\n")
        sys.stderr.write("    file.zip@member.pkl\n")
        sys.stderr.write("    file.zip@*/pattern.*\n")
        sys.stderr.write("      (shell glob pattern for members)\n")
        sys.stderr.write("      (only first match will be shown)\n")
        return 2
    fname = argv[1]
    if "@" not in fname:
        with open(fname, "rb") as handle:
            DumpUnpickler.dump(handle, output_stream)
        return None
    zfname, mname = fname.split("@", 1)
    with zipfile.ZipFile(zfname) as zf:
        if "*" not in mname:
            with zf.open(mname) as handle:
                DumpUnpickler.dump(handle, output_stream)
            return None
        for info in zf.infolist():
            if fnmatch.fnmatch(info.filename, mname):
                with zf.open(info) as handle:
                    DumpUnpickler.dump(handle, output_stream)
                return None
        raise Exception(f"Could not find member matching {mname} in {zfname}")


if __name__ == "__main__":
    pprint.PrettyPrinter._dispatch[FakeObject.__repr__] = FakeObject.pp_format
    sys.exit(main(sys.argv))
