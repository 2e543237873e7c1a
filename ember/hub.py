"""``ember.hub``: models from a directory with a ``hubconf.py``, and checkpoints from URLs
(PyTorch's ``torch.hub``).

``load(dir, model, source="local")`` imports ``dir/hubconf.py``, checks the modules its
``dependencies`` list can be imported, and calls its entry point ``model``. A GitHub repository
(``source="github"``, ``list``, ``help``) is read from the hub cache, ``<hub_dir>/owner_name_ref``
as PyTorch lays it out: ember never contacts GitHub, so a repository that is not cached there
(or ``force_reload``) raises. ``download_url_to_file`` and ``load_state_dict_from_url`` fetch any
URL urllib opens (``file://`` too), check a SHA-256 prefix, and cache checkpoints in
``<hub_dir>/checkpoints``. The hub directory is ``$TORCH_HOME/hub``, ``$TORCH_HOME`` defaulting to
``$XDG_CACHE_HOME/torch`` (``~/.cache/torch``): the same files PyTorch uses.
"""
import contextlib
import errno
import hashlib
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import Request, urlopen

from .serialization import load as _load


class _Faketqdm:
    """The part of ``tqdm`` used here, when tqdm is not installed: percentages (or bytes) on
    stderr."""

    def __init__(self, total=None, disable=False, unit=None, *args, **kwargs):
        self.total = total
        self.disable = disable
        self.n = 0

    def update(self, n):
        if self.disable:
            return
        self.n += n
        if self.total is None:
            sys.stderr.write(f"\r{self.n:.1f} bytes")
        else:
            sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
        sys.stderr.flush()

    def close(self):
        self.disable = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.disable:
            return
        sys.stderr.write("\n")


try:
    from tqdm import tqdm
except ImportError:
    tqdm = _Faketqdm

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url",
           "set_dir"]

# matches bfd8deac from resnet18-bfd8deac.pth
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_PATH_SEP_PATTERN = re.compile(r"[/\\]")

_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
_hub_dir = None


@contextlib.contextmanager
def _add_to_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_module(name, path):
    import importlib.util
    from importlib.abc import Loader
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise AssertionError(f"failed to load spec from {path}")
    module = importlib.util.module_from_spec(spec)
    if not isinstance(spec.loader, Loader):
        raise AssertionError(f"expected Loader, got {type(spec.loader)}")
    spec.loader.exec_module(module)
    return module


def _safe_extract_zip(zip_file, extract_to):
    """Extract ``zip_file`` into ``extract_to``, refusing entries that would land outside it
    (absolute paths, ``..``): a "zip slip"."""
    extract_to = Path(extract_to).resolve(strict=False)
    for member in zip_file.infolist():
        filename = os.path.normpath(member.filename)
        if filename.startswith(("/", "\\")):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if len(filename) >= 2 and filename[1] == ":" and filename[0].isalpha():
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(_PATH_SEP_PATTERN, filename):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        out = (extract_to / filename).resolve(strict=False)
        if not out.is_relative_to(extract_to):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        zip_file.extract(member, extract_to)


def _load_attr_from_module(module, func_name):
    if func_name not in dir(module):
        return None
    return getattr(module, func_name)


def _get_torch_home():
    return os.path.expanduser(
        os.getenv(ENV_TORCH_HOME,
                  os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")))


def _parse_repo_info(github):
    if ":" in github:
        repo_info, ref = github.split(":")
    else:
        repo_info, ref = github, None
    repo_owner, repo_name = repo_info.split("/")
    if ref is None:
        # PyTorch asks GitHub whether the default branch is main or master and, offline, takes
        # whichever of the two is cached; ember never asks
        for possible_ref in ("main", "master"):
            if os.path.exists(f"{get_dir()}/{repo_owner}_{repo_name}_{possible_ref}"):
                ref = possible_ref
                break
        if ref is None:
            raise RuntimeError(
                f"ember.hub does not download from GitHub (it makes no network requests), and "
                f"the repo {repo_owner}/{repo_name} could not be found in the cache "
                f"({get_dir()}) as {repo_owner}_{repo_name}_main or _master")
    return repo_owner, repo_name, ref


def _get_cache_or_reload(github, force_reload, trust_repo, verbose=True, skip_validation=False):
    """The directory of the cached repository ``github`` ("owner/name[:ref]")."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    repo_owner, repo_name, ref = _parse_repo_info(github)
    # GitHub allows "/" in branch names (not "\\")
    normalized_br = ref.replace("/", "_")
    owner_name_branch = "_".join([repo_owner, repo_name, normalized_br])
    repo_dir = os.path.join(hub_dir, owner_name_branch)
    if force_reload or not os.path.exists(repo_dir):
        raise RuntimeError(
            f"Downloading {repo_owner}/{repo_name} (ref {ref}) from GitHub needs network access, "
            f"which ember.hub does not use: put the repository's files in {repo_dir} (as "
            f"torch.hub caches them), or load it with source='local'")
    _check_repo_is_trusted(repo_owner, repo_name, owner_name_branch, trust_repo=trust_repo)
    if verbose:
        sys.stderr.write(f"Using cache found in {repo_dir}\n")
    return repo_dir


def _check_repo_is_trusted(repo_owner, repo_name, owner_name_branch, trust_repo):
    hub_dir = get_dir()
    filepath = os.path.join(hub_dir, "trusted_list")
    if not os.path.exists(filepath):
        Path(filepath).touch()
    with open(filepath) as file:
        trusted_repos = tuple(line.strip() for line in file)

    # a repo already in the cache counts as trusted (it was downloaded before trust_repo existed)
    trusted_repos_legacy = next(os.walk(hub_dir))[1]

    owner_name = "_".join([repo_owner, repo_name])
    is_trusted = (owner_name in trusted_repos or owner_name_branch in trusted_repos_legacy
                  or repo_owner in _TRUSTED_REPO_OWNERS)

    if (trust_repo is False) or (trust_repo == "check" and not is_trusted):
        response = input(
            f"The repository {owner_name} does not belong to the list of trusted repositories "
            "and as such cannot be downloaded. Do you trust this repository and wish to add it to "
            "the trusted list of repositories (y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")  # PyTorch's exception type
        else:
            raise ValueError(f"Unrecognized response {response}.")

    if not is_trusted:
        with open(filepath, "a") as file:
            file.write(owner_name + "\n")


def _check_module_exists(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None


def _check_dependencies(m):
    dependencies = _load_attr_from_module(m, VAR_DEPENDENCY)
    if dependencies is not None:
        missing_deps = [pkg for pkg in dependencies if not _check_module_exists(pkg)]
        if missing_deps:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing_deps)}")


def _load_entry_from_hubconf(m, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    # a dependency missing at the hubconf's top level already failed its import, with Python's
    # own error: the list can only be read from the imported hubconf
    _check_dependencies(m)
    func = _load_attr_from_module(m, model)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def get_dir():
    """The hub cache directory: the one ``set_dir`` set, else ``$TORCH_HOME/hub``, where
    ``$TORCH_HOME`` defaults to ``$XDG_CACHE_HOME/torch`` and ``$XDG_CACHE_HOME`` to
    ``~/.cache``."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    """Set the hub cache directory (``~`` expanded)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def list(github, force_reload=False, skip_validation=False, trust_repo="check",  # noqa: A001
         verbose=True):
    """The names of the callable entry points of the cached repository ``github``
    ("owner/name[:ref]"): the public callables of its ``hubconf.py``."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=verbose,
                                    skip_validation=skip_validation)
    with _add_to_sys_path(repo_dir):
        hubconf_path = os.path.join(repo_dir, MODULE_HUBCONF)
        hub_module = _import_module(MODULE_HUBCONF, hubconf_path)
    # names starting with "_" are helpers
    return [f for f in dir(hub_module)
            if callable(getattr(hub_module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False,  # noqa: A001
         trust_repo="check"):
    """The docstring of entry point ``model`` of the cached repository ``github``."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=True,
                                    skip_validation=skip_validation)
    with _add_to_sys_path(repo_dir):
        hubconf_path = os.path.join(repo_dir, MODULE_HUBCONF)
        hub_module = _import_module(MODULE_HUBCONF, hubconf_path)
    entry = _load_entry_from_hubconf(hub_module, model)
    return entry.__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Call entry point ``model`` of ``hubconf.py`` with ``*args, **kwargs`` and return what it
    returns. ``source="local"``: ``repo_or_dir`` is a directory; ``source="github"``:
    "owner/name[:ref]", read from the hub cache."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo,
                                           verbose=verbose, skip_validation=skip_validation)
    return _load_local(repo_or_dir, model, *args, **kwargs)


def _load_local(hubconf_dir, model, *args, **kwargs):
    with _add_to_sys_path(hubconf_dir):
        hubconf_path = os.path.join(hubconf_dir, MODULE_HUBCONF)
        hub_module = _import_module(MODULE_HUBCONF, hubconf_path)
        entry = _load_entry_from_hubconf(hub_module, model)
        model = entry(*args, **kwargs)
    return model


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download ``url`` to the file ``dst``; with ``hash_prefix``, the file's SHA-256 must
    start with it. ``progress`` shows a progress bar on stderr."""
    # Written to a temporary file moved into place when complete, so that a broken download
    # never replaces a good file; not NamedTemporaryFile, whose restrictive permissions would
    # stay on the result.
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        tmp_dst = dst + "." + uuid.uuid4().hex + ".partial"
        try:
            f = open(tmp_dst, "w+b")  # noqa: SIM115  (closed in the finally below)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    req = Request(url, headers={"User-Agent": "torch.hub"})
    try:
        with urlopen(req) as u:
            meta = u.info()
            if hasattr(meta, "getheaders"):
                content_length = meta.getheaders("Content-Length")
            else:
                content_length = meta.get_all("Content-Length")
            file_size = None
            if content_length is not None and len(content_length) > 0:
                file_size = int(content_length[0])

            sha256 = hashlib.sha256() if hash_prefix is not None else None
            with tqdm(total=file_size, disable=not progress, unit="B", unit_scale=True,
                      unit_divisor=1024) as pbar:
                while True:
                    buffer = u.read(READ_DATA_CHUNK)
                    if len(buffer) == 0:
                        break
                    f.write(buffer)
                    if sha256 is not None:
                        sha256.update(buffer)
                    pbar.update(len(buffer))

            f.close()
            if sha256 is not None and hash_prefix is not None:
                digest = sha256.hexdigest()
                if digest[:len(hash_prefix)] != hash_prefix:
                    raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                       f'"{digest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def _is_legacy_zip_format(filename):
    """A zip holding one file: how checkpoints saved before PyTorch 1.6 were compressed by hand
    (the zip of ``save`` holds several entries)."""
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            infolist = zf.infolist()
        return len(infolist) == 1 and not infolist[0].is_dir()
    return False


def _legacy_zip_load(filename, model_dir, map_location, weights_only):
    warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in favor "
                  "of default zipfile format introduced in 1.6. Please redo torch.save() to save "
                  "it in the new zipfile format.", FutureWarning, stacklevel=3)
    # extractall overwrites what is there
    with zipfile.ZipFile(filename) as f:
        members = f.infolist()
        if len(members) != 1:
            raise RuntimeError("Only one file(not dir) is allowed in the zipfile")
        _safe_extract_zip(f, model_dir)
        extracted_file = os.path.join(model_dir, members[0].filename)
    return _load(extracted_file, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """Load the object saved at ``url`` (with ``ember.load``, ``map_location`` and
    ``weights_only`` passed on), downloading it into ``model_dir`` (default
    ``<hub_dir>/checkpoints``) unless it is already there under ``file_name`` (default: the
    URL's file name). With ``check_hash`` the file name must be ``name-<sha256 prefix>.ext``
    and the download is checked against that prefix. A zip holding a single file is extracted
    first (the pre-1.6 convention)."""
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)

    parts = urlparse(url)
    filename = os.path.basename(parts.path)
    if file_name is not None:
        filename = file_name
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            r = HASH_REGEX.search(filename)
            hash_prefix = r.group(1) if r else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)

    if _is_legacy_zip_format(cached_file):
        return _legacy_zip_load(cached_file, model_dir, map_location, weights_only)
    return _load(cached_file, map_location=map_location, weights_only=weights_only)
