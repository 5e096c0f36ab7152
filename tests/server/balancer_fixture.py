"""haproxy with the shipped configuration (deploy/haproxy/kaas.cfg) on a free loopback port, its
admin socket, and kaas-servers added to and taken out of its backend at run time (dynamic servers)."""
import os
import pathlib
import socket
import subprocess
import time

from server_fixture import free_ports

DEPLOY = pathlib.Path(__file__).resolve().parents[2] / "deploy"


def wait_for(condition, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


class Haproxy:
    def __init__(self, tmp):
        self.socket = pathlib.Path(tmp) / "haproxy.sock"
        self.port = free_ports(1)[0]
        env = dict(os.environ, KAAS_LB_BIND=f"127.0.0.1:{self.port}", KAAS_LB_ADMIN_SOCKET=str(self.socket))
        self.process = subprocess.Popen(["haproxy", "-f", str(DEPLOY / "haproxy" / "kaas.cfg"), "-db"], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.started = wait_for(self.socket.exists)

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def admin(self, command):
        """One runtime API command; its answer."""
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(self.socket))
            s.sendall(command.encode() + b"\n")
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        return answer.decode().strip()

    def add(self, slot, http_port, grpc_port):
        """Dynamic server s<slot> at 127.0.0.1:grpc_port, checked on http_port; the answers."""
        return [self.admin(f"add server kaas/s{slot} 127.0.0.1:{grpc_port} proto h2 check check-proto h1 "
                           f"port {http_port} inter 200ms fall 1 rise 2"),
                self.admin(f"enable health kaas/s{slot}"),
                self.admin(f"enable server kaas/s{slot}")]

    def remove(self, slot):
        """No new requests to s<slot>; those it serves finish."""
        return self.admin(f"disable server kaas/s{slot}")

    def servers_up(self):
        return self.admin("show stat").count(",UP,")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
