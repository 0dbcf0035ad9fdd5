"""A loopback TCP proxy whose connections a test can cut or slow (the chaos check's network faults).

The operator reaches the apiserver through it; TLS passes through untouched (the apiserver's certificate names
127.0.0.1, whatever the port). :meth:`TcpProxy.cut` closes every open connection at once, as a broken network
or an apiserver behind a restarting load balancer does; :meth:`TcpProxy.slow` delays every chunk in both
directions for a while. It listens and connects on loopback only.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass, field

CHUNK = 64 * 1024


@dataclass
class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``127.0.0.1:<target_port>`` until :meth:`close`."""

    target_port: int
    port: int = 0
    _listener: socket.socket = field(init=False)
    _sockets: set[socket.socket] = field(default_factory=set, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _delay: float = field(default=0.0, init=False)
    _slow_until: float = field(default=0.0, init=False)
    _closed: bool = field(default=False, init=False)
    cuts: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, name="tcpproxy-accept", daemon=True).start()

    def cut(self) -> int:
        """Close every open connection (both ends); returns how many were open."""
        with self._lock:
            open_sockets, self._sockets = self._sockets, set()
        for sock in open_sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self.cuts += 1
        return len(open_sockets) // 2

    def slow(self, delay: float, seconds: float) -> None:
        """Delay every chunk by ``delay`` seconds for the next ``seconds``."""
        self._delay, self._slow_until = delay, time.monotonic() + seconds

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        self.cut()

    def _accept(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
                upstream.settimeout(None)
            except OSError:
                downstream.close()
                continue
            with self._lock:
                self._sockets.update((downstream, upstream))
            for source, sink in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(CHUNK):
                if time.monotonic() < self._slow_until:
                    time.sleep(self._delay)
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with self._lock:
                    self._sockets.discard(sock)
                sock.close()
