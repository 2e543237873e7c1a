"""Key-value stores for rendezvous: ``TCPStore`` (hosted by rank 0, PyTorch's ``TCPStore``),
``FileStore``, ``HashStore`` and ``PrefixStore`` (a namespace in another store).

The stores only carry the rendezvous (the MPI port name and who has arrived) and liveness: the
data of the collectives moves over MPI. The TCP store also knows which ranks' processes have gone
away (their connection closed), so that a timed-out collective can name the missing ranks.
"""
import collections
import errno
import json
import os
import socket
import socketserver
import struct
import threading
import time
from datetime import timedelta

from ._errors import DistNetworkError, DistStoreError, QueueEmptyError

__all__ = ["Store", "TCPStore", "FileStore", "HashStore", "PrefixStore"]


def _seconds(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


class Store:
    """The interface shared by the stores (``set``/``get``/``add``/``wait``/``check``)."""

    def __init__(self, timeout=timedelta(seconds=300)):
        self.timeout = timeout if isinstance(timeout, timedelta) else timedelta(seconds=timeout)

    def set_timeout(self, timeout):
        self.timeout = timeout

    def missing_ranks(self, world_size):  # pragma: no cover - only the TCP store knows
        return None

    # the queues of PyTorch's stores: HashStore and TCPStore have them, FileStore does not
    def queue_push(self, key, value):
        raise NotImplementedError("queue support is not implemented.")

    def queue_pop(self, key, block=True):
        raise NotImplementedError("queue support is not implemented.")

    def queue_len(self, key):
        raise NotImplementedError("queue support is not implemented.")


class HashStore(Store):
    """An in-process store (one process: world size 1, tests)."""

    def __init__(self, timeout=timedelta(seconds=300)):
        super().__init__(timeout)
        self._data = {}
        self._queues = collections.defaultdict(collections.deque)
        self._cv = threading.Condition()

    def set(self, key, value):
        with self._cv:
            self._data[key] = _as_bytes(value)
            self._cv.notify_all()

    def get(self, key):
        self.wait([key])
        with self._cv:
            return self._data[key]

    def add(self, key, amount):
        with self._cv:
            v = int(self._data.get(key, b"0")) + int(amount)
            self._data[key] = str(v).encode()
            self._cv.notify_all()
            return v

    def _has(self, key):
        return key in self._data or bool(self._queues.get(key))

    def check(self, keys):
        with self._cv:
            return all(self._has(k) for k in keys)

    def wait(self, keys, timeout=None):
        t = _seconds(timeout) if timeout is not None else self.timeout.total_seconds()
        with self._cv:
            if not self._cv.wait_for(lambda: all(k in self._data for k in keys), t):
                raise DistStoreError("Wait timeout")

    def queue_push(self, key, value):
        with self._cv:
            self._queues[key].append(_as_bytes(value))
            self._cv.notify_all()

    def queue_pop(self, key, block=True):
        with self._cv:
            q = self._queues[key]
            if not q:
                if not block:
                    raise QueueEmptyError("queue is empty")
                if not self._cv.wait_for(lambda: q, self.timeout.total_seconds()):
                    raise DistStoreError("Wait timeout")
            return q.popleft()

    def queue_len(self, key):
        with self._cv:
            return len(self._queues.get(key, ()))


def _ms(seconds):
    return int(round(seconds * 1000))


def _as_bytes(value):
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


# --- TCP store: one request/response per message, each a length-prefixed JSON header plus a
# binary value. The server runs in a daemon thread of the process that hosts it (rank 0).

def _send(sock, header, payload=b""):
    h = json.dumps(header).encode()
    sock.sendall(struct.pack("!II", len(h), len(payload)) + h + payload)


def _recvall(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("failed to recv, got 0 bytes")
        buf += chunk
    return bytes(buf)


def _recv(sock):
    hl, pl = struct.unpack("!II", _recvall(sock, 8))
    return json.loads(_recvall(sock, hl)), _recvall(sock, pl)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr):
        super().__init__(addr, _Handler)
        self.data = {}
        self.queues = collections.defaultdict(collections.deque)
        self.cv = threading.Condition()
        self.ranks = {}  # rank -> True while its connection is open, False once it closed


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        srv, sock, rank = self.server, self.request, None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    hdr, payload = _recv(sock)
                except (ConnectionError, OSError):
                    return
                cmd = hdr["cmd"]
                if cmd == "hello":
                    rank = hdr["rank"]
                    with srv.cv:
                        srv.ranks[rank] = True
                    _send(sock, {"ok": True})
                elif cmd == "set":
                    with srv.cv:
                        srv.data[hdr["key"]] = payload
                        srv.cv.notify_all()
                    _send(sock, {"ok": True})
                elif cmd == "add":
                    with srv.cv:
                        v = int(srv.data.get(hdr["key"], b"0")) + hdr["amount"]
                        srv.data[hdr["key"]] = str(v).encode()
                        srv.cv.notify_all()
                    _send(sock, {"ok": True}, str(v).encode())
                elif cmd == "wait":
                    keys, t = hdr["keys"], hdr["timeout"]
                    with srv.cv:
                        ok = srv.cv.wait_for(lambda: all(k in srv.data for k in keys), t)
                    _send(sock, {"ok": ok})
                elif cmd == "get":
                    with srv.cv:
                        v = srv.data.get(hdr["key"])
                    _send(sock, {"ok": v is not None}, v or b"")
                elif cmd == "check":
                    with srv.cv:
                        ok = all(k in srv.data or srv.queues.get(k) for k in hdr["keys"])
                    _send(sock, {"ok": ok})
                elif cmd == "queue_push":
                    with srv.cv:
                        srv.queues[hdr["key"]].append(payload)
                        srv.cv.notify_all()
                    _send(sock, {"ok": True})
                elif cmd == "queue_pop":
                    with srv.cv:
                        q = srv.queues[hdr["key"]]
                        ok = bool(q) or (hdr["timeout"] is not None
                                         and srv.cv.wait_for(lambda: bool(q), hdr["timeout"]))
                        v = q.popleft() if ok else b""
                    _send(sock, {"ok": ok}, v)
                elif cmd == "queue_len":
                    with srv.cv:
                        n = len(srv.queues.get(hdr["key"], ()))
                    _send(sock, {"ok": True, "len": n})
                elif cmd == "ranks":
                    with srv.cv:
                        _send(sock, {"ok": True, "ranks": {str(k): v for k, v in srv.ranks.items()}})
        finally:
            if rank is not None:
                with srv.cv:
                    srv.ranks[rank] = False
                    srv.cv.notify_all()


class TCPStore(Store):
    """PyTorch's ``TCPStore(host_name, port, world_size, is_master, timeout)``: the master runs
    the server; every process (the master too) talks to it through a client connection."""

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=timedelta(seconds=300), wait_for_workers=True, rank=None):
        super().__init__(timeout)
        self.host, self.port, self.world_size = host_name, int(port), world_size
        self._server = None
        if is_master:
            try:
                self._server = _Server(("", self.port))
            except OSError as e:
                raise DistNetworkError(
                    f"The server socket has failed to listen on any local network address. "
                    f"port: {self.port}, useIpv6: false, code: -{e.errno}, name: "
                    f"{errno.errorcode.get(e.errno, '')}, message: {e.strerror.lower()}") from e
            self.port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, daemon=True,
                             name="ember-tcpstore").start()
        self._lock = threading.Lock()
        self._sock = self._connect()
        if rank is not None:
            self._call({"cmd": "hello", "rank": rank})

    def _connect(self):
        deadline = time.monotonic() + self.timeout.total_seconds()
        while True:
            try:
                s = socket.create_connection((self.host, self.port), timeout=5)
                s.settimeout(None)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return s
            except OSError as e:
                if time.monotonic() > deadline:
                    ms = _ms(self.timeout.total_seconds())
                    raise DistNetworkError(f"The client socket has timed out after {ms}ms while "
                                           f"trying to connect to ({self.host}, "
                                           f"{self.port}).") from e
                time.sleep(0.05)

    def _call(self, header, payload=b""):
        with self._lock:
            try:
                _send(self._sock, header, payload)
                return _recv(self._sock)
            except OSError as e:  # the server is gone (its host exited)
                raise DistNetworkError(str(e)) from e

    def _timed_out(self, keys, t):
        return DistStoreError(f"wait timeout after {_ms(t)}ms, keys: "
                              f"{', '.join('/' + k for k in keys)}")

    def set(self, key, value):
        self._call({"cmd": "set", "key": key}, _as_bytes(value))

    def get(self, key):
        self.wait([key])
        hdr, v = self._call({"cmd": "get", "key": key})
        return v

    def add(self, key, amount):
        return int(self._call({"cmd": "add", "key": key, "amount": int(amount)})[1])

    def check(self, keys):
        return self._call({"cmd": "check", "keys": list(keys)})[0]["ok"]

    def wait(self, keys, timeout=None):
        t = _seconds(timeout) if timeout is not None else self.timeout.total_seconds()
        if not self._call({"cmd": "wait", "keys": list(keys), "timeout": t})[0]["ok"]:
            raise self._timed_out(keys, t)

    def queue_push(self, key, value):
        self._call({"cmd": "queue_push", "key": key}, _as_bytes(value))

    def queue_pop(self, key, block=True):
        t = self.timeout.total_seconds() if block else None
        hdr, v = self._call({"cmd": "queue_pop", "key": key, "timeout": t})
        if not hdr["ok"]:
            raise self._timed_out([key], t) if block else QueueEmptyError("queue is empty")
        return v

    def queue_len(self, key):
        return self._call({"cmd": "queue_len", "key": key})[0]["len"]

    def missing_ranks(self, world_size):
        """Ranks whose process never joined or whose connection has closed (it exited); None
        when the store itself is gone (its host, rank 0, exited)."""
        try:
            ranks = self._call({"cmd": "ranks"})[0]["ranks"]
        except DistNetworkError:
            return None
        return [r for r in range(world_size) if not ranks.get(str(r), False)]

    def close(self):
        try:
            self._sock.close()
        finally:
            if self._server is not None:
                self._server.shutdown()
                self._server.server_close()


class FileStore(Store):
    """PyTorch's ``FileStore(file_name, world_size)``: one file per key in ``file_name + '.d'``
    (a shared file system works across machines)."""

    def __init__(self, file_name, world_size=-1, timeout=timedelta(seconds=300)):
        super().__init__(timeout)
        self.path = file_name + ".d"
        os.makedirs(self.path, exist_ok=True)

    def _f(self, key):
        return os.path.join(self.path, key.replace("/", "%2F"))

    def set(self, key, value):
        tmp = self._f(key) + f".tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(_as_bytes(value))
        os.replace(tmp, self._f(key))

    def get(self, key):
        if not self._wait_for([key], self.timeout.total_seconds()):
            # PyTorch's FileStore raises plain RuntimeErrors on timeouts
            raise RuntimeError(f"Timeout waiting for key: {key} after "
                               f"{_ms(self.timeout.total_seconds())} ms")
        with open(self._f(key), "rb") as f:
            return f.read()

    def add(self, key, amount):
        # an O_EXCL lock file serializes the read-modify-write across processes
        lock = self._f(key) + ".lock"
        deadline = time.monotonic() + self.timeout.total_seconds()
        while True:
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL)
                break
            except FileExistsError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Timeout waiting for the lock of key {key}")
                time.sleep(0.001)
        try:
            v = int(self.get(key)) if os.path.exists(self._f(key)) else 0
            v += int(amount)
            self.set(key, str(v))
            return v
        finally:
            os.close(fd)
            os.unlink(lock)

    def check(self, keys):
        return all(os.path.exists(self._f(k)) for k in keys)

    def _wait_for(self, keys, t):
        deadline = time.monotonic() + t
        while not self.check(keys):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def wait(self, keys, timeout=None):
        t = _seconds(timeout) if timeout is not None else self.timeout.total_seconds()
        if not self._wait_for(keys, t):
            raise RuntimeError("Wait timeout")


class PrefixStore(Store):
    """PyTorch's ``PrefixStore(prefix, store)``: every key ``k`` is ``prefix/k`` in ``store``, so
    that users of one store keep out of each other's keys. The timeout is the underlying
    store's."""

    def __init__(self, prefix, store):
        if not isinstance(prefix, str):
            raise TypeError(f"PrefixStore(): prefix must be a str, not {type(prefix).__name__}")
        if store is None:
            raise ValueError("store argument cannot be None")
        self._prefix = prefix
        self._store = store

    @property
    def underlying_store(self):
        return self._store

    @property
    def timeout(self):
        return self._store.timeout

    def set_timeout(self, timeout):
        self._store.set_timeout(timeout)

    def _k(self, key):
        return f"{self._prefix}/{key}"

    def set(self, key, value):
        self._store.set(self._k(key), value)

    def get(self, key):
        return self._store.get(self._k(key))

    def add(self, key, amount):
        return self._store.add(self._k(key), amount)

    def check(self, keys):
        return self._store.check([self._k(k) for k in keys])

    def wait(self, keys, timeout=None):
        self._store.wait([self._k(k) for k in keys], timeout)

    def queue_push(self, key, value):
        self._store.queue_push(self._k(key), value)

    def queue_pop(self, key, block=True):
        return self._store.queue_pop(self._k(key), block)

    def queue_len(self, key):
        return self._store.queue_len(self._k(key))

    def missing_ranks(self, world_size):
        return self._store.missing_ranks(world_size)
