"""Slow and idle HTTP clients held open against a server, for the REST benchmark and the soak:
`slow` connections that send a request line and then one header line every `interval` seconds
(never finishing the header), and `idle` connections that send nothing. A connection the server
closes (header or idle timeout) is opened again, so the counts hold for as long as this runs."""
import resource
import select
import socket
import threading
import time


class HostileConnections:
    def __init__(self, host, port, slow=64, idle=1000, interval=2.0):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        self.address = (host, port)
        self.interval = interval
        self.reopened = 0
        self.slow = [self._open_slow() for _ in range(slow)]
        self.idle = [socket.create_connection(self.address) for _ in range(idle)]
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open_slow(self):
        s = socket.create_connection(self.address)
        s.sendall(b"POST /v2/models/knn/infer HTTP/1.1\r\nHost: x\r\n")
        return s

    def _run(self):
        next_line = time.time() + self.interval
        while not self.stopping.is_set():
            poller = select.poll()  # select() cannot watch descriptors above 1024
            by_fd = {}
            for s in self.slow + self.idle:
                poller.register(s, select.POLLIN)
                by_fd[s.fileno()] = s
            ready = [by_fd[fd] for fd, _ in poller.poll(200)]
            for s in ready:  # the server answered (408) or closed: open a replacement
                try:
                    s.recv(65536)
                except OSError:
                    pass
                s.close()
                self.reopened += 1
                if s in self.slow:
                    self.slow[self.slow.index(s)] = self._open_slow()
                else:
                    self.idle[self.idle.index(s)] = socket.create_connection(self.address)
            if time.time() >= next_line:
                next_line += self.interval
                for s in self.slow:
                    try:
                        s.sendall(b"X-Slow: 1\r\n")
                    except OSError:
                        pass

    def close(self):
        self.stopping.set()
        self.thread.join()
        for s in self.slow + self.idle:
            s.close()
