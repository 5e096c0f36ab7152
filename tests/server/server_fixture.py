"""What the server test scripts share: kaas-server started on free loopback ports and stopped
(SIGTERM) afterwards, the default repository written for it, and the check/failure tally."""
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import time

failures = []


def check(condition, what):
    """Prints one ok/FAIL line and remembers the failures for the exit status."""
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        failures.append(what)


def write_repository(make_repository_bin, directory):
    """The default model repository (kaas-make-repository) in `directory`."""
    subprocess.run([make_repository_bin, "--repository", str(directory)], check=True,
                   stdout=subprocess.DEVNULL)


class KaasServer:
    def __init__(self, server_bin, repository, extra_args=(), backend="openmp"):
        self.log = tempfile.NamedTemporaryFile("w+", prefix="kaas-server-", suffix=".log", delete=False)
        self.process = subprocess.Popen(
            [server_bin, "--model-repository", str(repository), "--http-port", "0", "--grpc-port", "0",
             "--metrics-port", "0", "--backend", backend, *extra_args],
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
            time.sleep(0.1)
        raise RuntimeError("kaas-server did not start within 120 s:\n" + pathlib.Path(self.log.name).read_text())

    @property
    def http_url(self):
        return f"{self.host}:{self.http_port}"

    @property
    def grpc_url(self):
        return f"{self.host}:{self.grpc_port}"

    def output(self):
        return pathlib.Path(self.log.name).read_text()

    def stop(self, timeout=60):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=timeout)
        os.unlink(self.log.name)
        return self.process.returncode
