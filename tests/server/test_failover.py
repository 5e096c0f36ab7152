#!/usr/bin/env python3
"""Several kaas-servers behind kaas::client's own balancing (kaas-client-load: concurrent
RemoteClient callers, answers compared with in-process kaas), on loopback, bounded in time:

1. kill -9 one of three servers under 16 clients: no call fails, none uses the fallback, no call
   takes more than 1 s longer than the slowest before the kill;
2. the killed server restarted on its port takes its share again (a third, >= 28 %, in some second
   of its first 5 ready) and the three servers' counts over 5 s stay within +-10 % of their mean;
3. SIGTERM to one of two under load (--drain-seconds): no call fails, the server exits 0;
4. every server down: the calls go to the in-process fallback, and back to the server once it
   returns.

Usage: test_failover.py --server BIN --make-repository BIN --client-load BIN
"""
import json
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from server_fixture import KaasServer, check, failures, fleet_arguments, free_ports, scratch_directory, stop_all, write_repository  # noqa: E402

# Each caller's other work between its calls (kaas-client-load --work-ms): 16 callers make ~250
# calls a second, which every check needs (round robin spreads them within a few calls of a
# third), at about half the CPU of callers in a tight loop (47 -> 29 CPU-s for this test), which
# the test command's other test on the second core gets back. The 4 callers of the fallback
# phase too (~80 calls a second; unpaced, they ran the model in-process on both cores).
PACE_MS = 50
MODEL = "emtrkmichelid"
DRAIN_SECONDS = 2


class Fleet:
    """kaas-servers on fixed ports, so that a restarted one takes its predecessor's place."""

    def __init__(self, server_bin, repository, count, running=None, drain_seconds=DRAIN_SECONDS):
        """`count` servers' ports; the first `running` (all by default) started now; each drains
        `drain_seconds` after SIGTERM (None: kaas-server's default)."""
        self.server_bin, self.repository = server_bin, repository
        self.drain_seconds = drain_seconds
        self.ports = [free_ports(3) for _ in range(count)]
        self.started = [False] * count
        self.servers = [self.start(i) if i < (count if running is None else running) else None
                        for i in range(count)]

    def start(self, i):
        """Server i on its ports. Its first start may find a port taken meanwhile (ports are
        chosen up front; another process's connection can take one): then it gets new ones. A
        restart keeps its ports: clients know them."""
        for attempt in range(3):
            try:
                server = KaasServer(self.server_bin, self.repository, ports=self.ports[i],
                                    extra_args=["--threads", "1"],
                                    drain_seconds=self.drain_seconds)
                self.started[i] = True
                return server
            except RuntimeError as e:
                if self.started[i] or "Address already in use" not in str(e) or attempt == 2:
                    raise
                self.ports[i] = free_ports(3)

    def addresses(self, which=None):
        which = range(len(self.ports)) if which is None else which
        return ",".join(f"127.0.0.1:{self.ports[i][1]}" for i in which)

    def counter(self, i, name):
        """The model's counter `name` on server i (0 when it is down)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[i][2]}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return 0
        m = re.search(r'^%s\{model="%s",version="1"\} (\d+)' % (name, MODEL), text, re.M)
        return int(m.group(1)) if m else 0

    def successes(self, i):
        return self.counter(i, "nv_inference_request_success")

    def stop(self):
        """SIGTERM to every running server at once: their drains overlap."""
        stop_all([s for s in self.servers if s is not None and s.process.poll() is None])


class Load:
    """kaas-client-load in the background; its per-second lines and summary once it ends. It runs
    for --seconds, the bound of what a phase's checks need, or until stop() (SIGINT: the calls
    in flight end and the summary of all calls follows)."""

    def __init__(self, client_load, repository, servers, seconds, clients=16, fallback=False, batch=1,
                 work_ms=0.0):
        cmd = [client_load, "--servers", servers, "--repository", str(repository), "--model", MODEL,
               "--clients", str(clients), "--seconds", str(seconds), "--retries", "4",
               "--backoff-ms", "50", "--probe-ms", "300", "--batch", str(batch),
               "--work-ms", str(work_ms)]
        if fallback:
            cmd.append("--fallback")
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self.read)
        self.reader.start()
        # The callers start after the in-process reference is built (seconds on a busy machine):
        # return once they have run for a second, so that what the caller times is under load.
        deadline = time.time() + 120
        while not self.lines and self.process.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        # The first line comes one second after the callers start; they stop `seconds` after.
        self.started = time.time() - 1
        self.ends_at = self.started + seconds

    def read(self):
        for line in self.process.stdout:
            self.lines.append(json.loads(line))

    def stop(self):
        """Ends the load now (once it has run at least a second)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)

    def stop_when(self, condition):
        """Polls the per-second lines printed so far; stops the load once condition(lines) holds
        (or lets it run out)."""
        while self.process.poll() is None and not condition(list(self.lines)):
            time.sleep(0.05)
        self.stop()

    def result(self):
        self.process.wait(timeout=120)
        self.reader.join()
        check(self.process.returncode == 0, f"kaas-client-load exited with {self.process.returncode}")
        return self.lines[-1], self.lines[:-1]


def answers_ok(what, summary):
    check(summary["failures"] == 0,
          f"{what}: {summary['failures']} of {summary['calls']} calls failed {summary['first_error'][:160]}")
    check(summary["max_abs_difference"] <= 1e-5,
          f"{what}: answers vs in-process kaas max |diff| {summary['max_abs_difference']:.2e} "
          f"({summary['bitwise_equal_calls']} of {summary['calls']} bit for bit)")


def wait_ready(server):
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://{server.http_url}/v2/health/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.02)


def main():
    args = fleet_arguments()
    repo = scratch_directory("kaas-failover-") / "repo"
    write_repository(args.make_repository, repo)
    fleet = Fleet(args.server, repo, 3)
    try:
        run(fleet, repo, args)
    finally:
        fleet.stop()
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


def run(fleet, repo, args):
    # 1. kill -9 one of three under load: after 3 s of calls, 2 s of calls after it.
    baseline = Load(args.client_load, repo, fleet.addresses(), seconds=5, work_ms=PACE_MS)
    time.sleep(2)
    fleet.servers[1].process.send_signal(signal.SIGKILL)
    summary, seconds = baseline.result()
    answers_ok("kill -9 one of 3", summary)
    check(summary["fallback_calls"] == 0, f"kill -9 one of 3: fallback unused ({summary['fallback_calls']} calls)")
    check(summary["max_ms"] < summary["p99_ms"] + 1000,
          f"kill -9 one of 3: slowest call {summary['max_ms']:.0f} ms (p99 {summary['p99_ms']:.0f} ms, "
          f"{summary['retried_calls']} calls retried)")
    fleet.servers[1].stop()

    # 2. restart it under load (the callers have run for a second): its share within 5 s, then
    # an even spread. The load lasts for the longest case: a 3 s start, the share in the 5th
    # second, 1 s, the 5 s window.
    load = Load(args.client_load, repo, fleet.addresses(), seconds=15, work_ms=PACE_MS)
    fleet.servers[1] = fleet.start(1)
    wait_ready(fleet.servers[1])
    # The clients see it only after their health watch does (a second or two on a busy
    # machine): the check is that some whole second of its first 5 ready holds its share (the
    # seconds after the first that does are not needed).
    samples = [[fleet.successes(i) for i in range(3)]]
    shares = []
    while len(shares) < 5 and not (shares and shares[-1] >= 0.28):
        time.sleep(1)
        samples.append([fleet.successes(i) for i in range(3)])
        window = [b - a for a, b in zip(samples[-2], samples[-1])]
        shares.append(window[1] / max(sum(window), 1))
    check(max(shares) >= 0.28, "restarted server: its share per second once ready "
          f"{[f'{x:.0%}' for x in shares]} reaches a third (>= 28 %) within 5 s")
    time.sleep(1)
    before = [fleet.successes(i) for i in range(3)]
    time.sleep(5)
    window = [b - a for a, b in zip(before, [fleet.successes(i) for i in range(3)])]
    mean = sum(window) / 3
    check(mean > 0 and all(abs(w - mean) <= 0.1 * mean for w in window),
          f"steady load: per-server requests {window} within 10 % of their mean {mean:.0f}")
    load.stop()
    summary, _ = load.result()
    answers_ok("restart", summary)

    # 3. SIGTERM one of two under load (after a second of calls): it drains, nothing fails; the
    # callers go on a second or two after its exit. (The third server drains while this load
    # starts.)
    fleet.servers[2].terminate()
    load = Load(args.client_load, repo, fleet.addresses([0, 1]), seconds=5, work_ms=PACE_MS)
    fleet.servers[2].stop()
    drained = fleet.servers[1]
    drained.process.send_signal(signal.SIGTERM)
    code = drained.process.wait(timeout=60)
    summary, _ = load.result()
    answers_ok("SIGTERM one of 2", summary)
    check(code == 0, f"SIGTERM one of 2: the drained server exited with {code}")
    check("drain over" in drained.output(), "SIGTERM one of 2: the server logged its drain")

    # 4. every server down -> the fallback; back to the server once it returns. The load stops two
    # whole seconds on the server after the restart (stop_when below); 30 s only bounds it, since
    # a restart on a loaded machine can take several seconds (10 s were too few under CPU
    # contention: the load ran out 1 s after the server was back).
    load = Load(args.client_load, repo, fleet.addresses([0]), seconds=30, clients=4, fallback=True,
                work_ms=PACE_MS)
    time.sleep(1)
    fleet.servers[0].process.send_signal(signal.SIGKILL)
    fleet.servers[0].process.wait()
    time.sleep(1.5)
    fleet.servers[0] = fleet.start(0)
    returned_at = time.time()
    # Two whole seconds after the restart on the server are what is checked: stop then.
    first_after = int(returned_at - load.started) + 1
    load.stop_when(lambda lines: len(lines) >= first_after + 2 and all(
        s["fallback_calls"] == 0 and s["calls"] > 0 for s in lines[-2:]))
    summary, per_second = load.result()
    answers_ok("all servers down", summary)
    check(summary["fallback_calls"] > 0, f"all servers down: {summary['fallback_calls']} calls ran on the fallback")
    tail = per_second[-2:]
    check(all(s["fallback_calls"] == 0 and s["calls"] > 0 for s in tail),
          f"server back: the last seconds ran on the server {tail} "
          f"(load ended {time.time() - returned_at:.1f} s after the restart began)")
    check(fleet.successes(0) > 0, f"server back: the restarted server answered {fleet.successes(0)} requests")


if __name__ == "__main__":
    sys.exit(main())
