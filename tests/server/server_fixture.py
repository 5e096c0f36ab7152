"""What the server test scripts share: kaas-server (or the real tritonserver with the kaas
backend) started on free loopback ports and stopped (SIGTERM) afterwards, the default repository
written for it, and the check/failure tally."""
import atexit
import importlib.util
import argparse
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

failures = []


def check(condition, what):
    """Prints one ok/FAIL line and remembers the failures for the exit status."""
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        failures.append(what)


def expect_error(what, call, fragment, codes):
    """`call` must raise a tritonclient error whose status has one of `codes` and whose message
    holds `fragment`."""
    from tritonclient.utils import InferenceServerException

    try:
        call()
        check(False, f"{what}: rejected")
    except InferenceServerException as e:
        status = str(e.status())
        ok = any(c in status for c in codes) and fragment in e.message()
        check(ok, f"{what}: {status} '{e.message()[:140]}'")


def fleet_arguments():
    """The command line of the tests that drive kaas-servers with kaas-client-load:
    --server BIN --make-repository BIN --client-load BIN."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--client-load", required=True)
    return parser.parse_args()


def scratch_directory(prefix):
    """A directory for a test's repositories, plans and logs, removed when the test's process
    ends: each server test writes 90-320 MB (model repositories), which were left in /tmp."""
    path = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def log_file(prefix):
    """A server's log, read while it runs and removed when the test's process ends."""
    log = tempfile.NamedTemporaryFile("w+", prefix=prefix, suffix=".log", delete=False)
    atexit.register(lambda: pathlib.Path(log.name).unlink(missing_ok=True))
    return log


def write_repository(make_repository_bin, directory, target="kaas"):
    """The default model repository (kaas-make-repository) in `directory`, for kaas-server or
    (target "triton") for tritonserver with the kaas backend."""
    subprocess.run([make_repository_bin, "--repository", str(directory), "--for", target], check=True,
                   stdout=subprocess.DEVNULL)


def test_backend():
    """The backend the server tests run on: openmp, or what a build without OpenMP (the
    ThreadSanitizer build) names in KAAS_TEST_SERVER_BACKEND."""
    return os.environ.get("KAAS_TEST_SERVER_BACKEND", "openmp")


class ServerProcess:
    """A server process on loopback with its log in a temporary file; stop() sends SIGTERM."""

    @property
    def http_url(self):
        return f"{self.host}:{self.http_port}"

    @property
    def grpc_url(self):
        return f"{self.host}:{self.grpc_port}"

    final_output = None
    terminated = False

    def output(self):
        if self.final_output is not None:
            return self.final_output
        return pathlib.Path(self.log.name).read_text(errors="replace")

    def terminate(self):
        """SIGTERM now, without waiting; a later stop() waits for the exit and sends no second
        signal (a second SIGTERM ends kaas-server's drain at once)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.terminated = True

    def stop(self, timeout=90):
        """SIGTERM (unless terminate() sent it), then the exit status (a server that does not stop
        in time is killed); the log file is removed, its text stays readable through output()."""
        if self.process.poll() is None:
            if not self.terminated:
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.final_output is None:
            self.final_output = self.output()
            os.unlink(self.log.name)
        return self.process.returncode


def stop_all(servers, timeout=90):
    """stop() for several servers, SIGTERM to all of them first: their drains overlap."""
    for server in servers:
        server.terminate()
    return [server.stop(timeout) for server in servers]


class KaasServer(ServerProcess):
    def __init__(self, server_bin, repository, extra_args=(), backend=None, ports=(0, 0, 0),
                 drain_seconds=0):
        """ports: (http, gRPC, metrics), 0 = any free one; fixed ports let a restarted server
        take its predecessor's place. drain_seconds: --drain-seconds after SIGTERM (0: the tests
        stop at once; None: kaas-server's default)."""
        backend = backend or test_backend()
        if drain_seconds is not None:
            extra_args = [*extra_args, "--drain-seconds", str(drain_seconds)]
        self.log = log_file("kaas-server-")
        self.process = subprocess.Popen(
            [server_bin, "--model-repository", str(repository), "--http-port", str(ports[0]),
             "--grpc-port", str(ports[1]), "--metrics-port", str(ports[2]), "--backend", backend, *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            text = pathlib.Path(self.log.name).read_text()
            match = re.search(r"listening host=(\S+) http=(\d+) grpc=(\d+) metrics=(\d+)", text)
            if match:
                self.host = match.group(1)
                self.http_port, self.grpc_port, self.metrics_port = map(int, match.groups()[1:])
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"kaas-server exited with {self.process.returncode}:\n{text}")
            time.sleep(0.02)
        raise RuntimeError("kaas-server did not start within 120 s:\n" + pathlib.Path(self.log.name).read_text())



def free_ports(count):
    """`count` distinct free TCP ports on 127.0.0.1 (bound once, then released)."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def tritonserver_binary():
    """The tritonserver executable shipped by the nvidia-pytriton wheel in this Python."""
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("nvidia-pytriton is not installed in this Python (scripts/python_env.sh)")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "tritonserver" / "bin" / "tritonserver"


class TritonServer(ServerProcess):
    """The real Triton server (PyPI nvidia-pytriton) with the kaas backend, on loopback only."""

    def __init__(self, repository, backend_directory, extra_args=(), wait_ready=True):
        self.log = log_file("tritonserver-")
        self.http_port, self.grpc_port, self.metrics_port = free_ports(3)
        self.host = "127.0.0.1"
        self.process = subprocess.Popen(
            [str(tritonserver_binary()), f"--model-repository={repository}",
             f"--backend-directory={backend_directory}",
             "--http-address=127.0.0.1", f"--http-port={self.http_port}",
             "--grpc-address=127.0.0.1", f"--grpc-port={self.grpc_port}",
             "--metrics-address=127.0.0.1", f"--metrics-port={self.metrics_port}",
             "--allow-gpu-metrics=false", "--pinned-memory-pool-byte-size=0", *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 180
        path = "/v2/health/ready" if wait_ready else "/v2/health/live"
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://{self.http_url}{path}", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):
                pass
            if self.process.poll() is not None:
                raise RuntimeError(f"tritonserver exited with {self.process.returncode}:\n{self.output()}")
            time.sleep(0.05)
        raise RuntimeError("tritonserver did not start within 180 s:\n" + self.output())



def pin_to_cpu(pid, cpu):
    """Every thread of process `pid` (and those it starts later) on CPU `cpu` (taskset)."""
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        subprocess.run(["taskset", "-p", "-c", str(cpu), task.name], check=True, stdout=subprocess.DEVNULL)
