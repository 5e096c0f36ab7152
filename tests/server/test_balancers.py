#!/usr/bin/env python3
"""The shipped balancer configurations in front of several kaas-servers, on loopback, with
kaas::client callers (kaas-client-load) sending through the balancer's one address:

haproxy (deploy/haproxy/kaas.cfg): servers added at run time through the admin socket; SIGTERM to
one of three kaas-servers with default flags (its default drain) under 8 clients fails no call;
kill -9 of one of three under 16 clients fails no call; a server taken out at run time gets no
more requests.
nginx (deploy/nginx/kaas-grpc.conf): a server added by rewriting the upstream file and reloading
takes traffic, kill -9 of one of two under load fails no call.

Usage: test_balancers.py --server BIN --make-repository BIN --client-load BIN
"""
import pathlib
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from server_fixture import check, failures, fleet_arguments, free_ports, scratch_directory, write_repository  # noqa: E402
from balancer_fixture import DEPLOY, Haproxy, wait_for  # noqa: E402
from test_failover import PACE_MS, Fleet, Load, answers_ok  # noqa: E402


def window(fleet, which, seconds):
    """Requests each server in `which` answered over the next `seconds`."""
    before = [fleet.successes(i) for i in which]
    time.sleep(seconds)
    return [fleet.successes(i) - b for i, b in zip(which, before)]


def haproxy(fleet, repo, args, tmp):
    lb = Haproxy(tmp)
    try:
        check(lb.started, "haproxy: started with deploy/haproxy/kaas.cfg")
        for i, (http, grpc, _) in enumerate(fleet.ports):
            answers = lb.add(i + 1, http, grpc)
            check(answers == ["New server registered.", "", ""], f"haproxy: server {i} added at run time: {answers}")
        check(wait_for(lambda: lb.servers_up() >= 3), "haproxy: three servers added at run time are UP")

        # kaas-server's default drain (SIGTERM: not ready for 3 s, still serving) is long enough
        # for haproxy's checks (every 200 ms) to take it out before it stops accepting.
        load = Load(args.client_load, repo, lb.address, seconds=5, clients=8, work_ms=PACE_MS)
        drained = fleet.servers[2]
        drained.process.send_signal(signal.SIGTERM)
        code = drained.process.wait(timeout=60)
        time.sleep(1)  # calls after its exit go to the other two
        load.stop()
        summary, _ = load.result()
        answers_ok("haproxy: SIGTERM to one of 3, default flags, 8 clients", summary)
        check(code == 0 and "serving for 3 s more" in drained.output(),
              f"haproxy: the SIGTERM'd server drained 3 s by default and exited with {code}")
        fleet.servers[2] = fleet.start(2)
        check(wait_for(lambda: lb.servers_up() >= 3, 60), "haproxy: the drained server, restarted, is UP again")

        # The callers have run for a second when Load returns; 2.5 s of calls after the kill.
        load = Load(args.client_load, repo, lb.address, seconds=5, work_ms=PACE_MS)
        counts = window(fleet, [0, 1, 2], 1.5)
        check(all(c > 0 for c in counts), f"haproxy: every server takes requests {counts}")
        fleet.servers[1].process.send_signal(signal.SIGKILL)
        summary, _ = load.result()
        answers_ok("haproxy: kill -9 one of 3", summary)
        check(summary["fallback_calls"] == 0, "haproxy: kill -9 one of 3: fallback unused")

        load = Load(args.client_load, repo, lb.address, seconds=5, work_ms=PACE_MS)
        lb.remove(3)
        time.sleep(1)
        counts = window(fleet, [0, 2], 2)
        load.stop()
        summary, _ = load.result()
        answers_ok("haproxy: a server taken out at run time", summary)
        check(counts[1] == 0 and counts[0] > 0, f"haproxy: after 'disable server' requests per server (0, 2): {counts}")
    finally:
        lb.stop()


def nginx(fleet, repo, args, tmp):
    prefix = tmp / "nginx"
    prefix.mkdir()
    port = free_ports(1)[0]
    site = (DEPLOY / "nginx" / "kaas-grpc.conf").read_text().replace("KAAS_LB_LISTEN", f"127.0.0.1:{port}")
    (prefix / "kaas-grpc.conf").write_text(site)
    upstreams = prefix / "kaas-upstreams.conf"

    def serve(which):
        upstreams.write_text("".join(f"server 127.0.0.1:{fleet.ports[i][1]} max_fails=1 fail_timeout=2s;\n"
                                     for i in which))

    serve([0])
    conf = prefix / "nginx.conf"
    conf.write_text(f"daemon off;\npid {prefix}/nginx.pid;\nerror_log stderr warn;\nevents {{}}\n"
                    f"http {{\n  access_log off;\n  client_body_temp_path {prefix}/body;\n"
                    f"  include {prefix}/kaas-grpc.conf;\n}}\n")
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    process = subprocess.Popen([nginx_bin, "-p", str(prefix), "-c", str(conf)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        check(wait_for(lambda: (prefix / "nginx.pid").exists()), "nginx: started with deploy/nginx/kaas-grpc.conf")
        # Reloaded under load (the callers have run for a second when Load returns); the window
        # starts once the added server has answered (its workers have the new upstreams).
        load = Load(args.client_load, repo, f"127.0.0.1:{port}", seconds=7, work_ms=PACE_MS)
        serve([0, 2])
        added = fleet.successes(2)
        subprocess.run([nginx_bin, "-p", str(prefix), "-c", str(conf), "-s", "reload"], check=True)
        wait_for(lambda: fleet.successes(2) > added, 10)
        counts = window(fleet, [0, 2], 2)
        check(counts[1] > 0, f"nginx: a server added by reload takes requests (0, 2): {counts}")
        fleet.servers[0].process.send_signal(signal.SIGKILL)
        time.sleep(2)  # calls after the kill go to the other
        load.stop()
        summary, _ = load.result()
        answers_ok("nginx: reload under load, then kill -9 one of 2", summary)
    finally:
        process.terminate()
        process.wait(timeout=30)


def main():
    args = fleet_arguments()
    for tool in ("haproxy", "nginx"):
        if not (shutil.which(tool) or pathlib.Path(f"/usr/sbin/{tool}").exists()):
            print(f"FAIL  {tool} is not installed (scripts/install_deps.sh installs it)")
            return 1
    tmp = scratch_directory("kaas-balancers-")
    repo = tmp / "repo"
    write_repository(args.make_repository, repo)
    fleet = Fleet(args.server, repo, 3, drain_seconds=None)  # kaas-server's default drain
    try:
        haproxy(fleet, repo, args, tmp)
        for i in (0, 1):
            if fleet.servers[i].process.poll() is not None:
                fleet.servers[i] = fleet.start(i)
        nginx(fleet, repo, args, tmp)
    finally:
        fleet.stop()
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
