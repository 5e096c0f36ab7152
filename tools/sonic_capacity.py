#!/usr/bin/env python3
"""kaas-sonic-capacity: the SONIC time-per-event model of the ProtoDUNE SONIC talk, from measured
numbers, for sizing a site: how many client processes one server (one GPU, or one CPU server)
carries before the clients wait for it.

The model (synchronous, blocking calls; p = the fraction of the CPU work that moves to the server):
  t_ideal = (1 - p) t_CPU + t_GPU + t_latency                         (server never busy)
  t_SONIC = (1 - p) t_CPU + t_GPU [1 + max(0, N_CPU/N_GPU - t_ideal/t_GPU)] + t_latency
so the time per event is flat up to N_CPU/N_GPU = t_ideal/t_GPU (the saturation point, and the
optimal ratio: the most clients per server before their events slow down) and grows by t_GPU per
client beyond it.

Inputs, all per event: --cpu-s (client work that stays on the CPU: non-ML modules),
--preprocess-s (the ML module's work left on the client: patches), --bytes (sent per event) with
--bandwidth-gbps, --travel-s (round trips: calls per event x RTT), and the server's time per event
(--server-s, or --server-throughput inferences/s with --inferences per event).

--protodune uses the talk's figures: 110 s non-ML, 7 s preprocessing, 1.9 s bandwidth
(48 x 48 x 32 bit x 55,000 patches = 3.9 Gbit at 2 Gb/s), 0.4 s travel, 2.7 s on the GPU.

Usage: sonic_capacity.py [--protodune] [--cpu-s S --preprocess-s S --bytes B --bandwidth-gbps G
                         --travel-s S (--server-s S | --server-throughput R --inferences N)]
                         [--max-ratio N] [--json]
"""
import argparse
import json
import math
import sys

PROTODUNE = {"cpu_s": 110.0, "preprocess_s": 7.0, "bandwidth_s": 1.9, "travel_s": 0.4, "server_s": 2.7}
# The talk's measurement: time per event flat up to 270 processes on a server with 4 T4 GPUs.
PROTODUNE_MEASURED = {"processes": 270, "gpus": 4}


def model(cpu_s, preprocess_s, bandwidth_s, travel_s, server_s):
    """The model's terms (seconds per event) and its saturation point."""
    client = cpu_s + preprocess_s  # (1 - p) t_CPU
    latency = bandwidth_s + travel_s
    ideal = client + server_s + latency
    return {"client_s": client, "latency_s": latency, "server_s": server_s, "t_ideal_s": ideal,
            "saturation_ratio": ideal / server_s}


def t_sonic(m, ratio):
    """Time per event with `ratio` client processes per server."""
    return m["client_s"] + m["server_s"] * (1 + max(0.0, ratio - m["saturation_ratio"])) + m["latency_s"]


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--protodune", action="store_true", help="the ProtoDUNE talk's figures")
    p.add_argument("--cpu-s", type=float, help="client CPU work per event that stays on the CPU")
    p.add_argument("--preprocess-s", type=float, default=0.0, help="client preprocessing per event")
    p.add_argument("--bytes", type=float, default=0.0, help="bytes sent per event")
    p.add_argument("--bandwidth-gbps", type=float, default=0.0, help="network bandwidth (Gbit/s)")
    p.add_argument("--travel-s", type=float, default=0.0, help="round-trip latency per event")
    p.add_argument("--server-s", type=float, help="server (device) time per event")
    p.add_argument("--server-throughput", type=float, help="server inferences per second")
    p.add_argument("--inferences", type=float, help="inferences per event (with --server-throughput)")
    p.add_argument("--max-ratio", type=int, default=0, help="table up to this many clients per server")
    p.add_argument("--json", action="store_true", help="print the model as JSON")
    a = p.parse_args(argv)
    if a.protodune:
        return a, dict(PROTODUNE)
    if a.cpu_s is None:
        p.error("--cpu-s (or --protodune) is required")
    if a.server_s is None:
        if a.server_throughput is None or a.inferences is None:
            p.error("give --server-s, or --server-throughput with --inferences")
        if a.server_throughput <= 0:
            p.error("--server-throughput must be > 0")
        a.server_s = a.inferences / a.server_throughput
    if a.server_s <= 0:
        p.error("the server time per event must be > 0")
    if a.bytes > 0 and a.bandwidth_gbps <= 0:
        p.error("--bytes needs --bandwidth-gbps > 0")
    bandwidth_s = a.bytes * 8 / (a.bandwidth_gbps * 1e9) if a.bytes > 0 else 0.0
    return a, {"cpu_s": a.cpu_s, "preprocess_s": a.preprocess_s, "bandwidth_s": bandwidth_s,
               "travel_s": a.travel_s, "server_s": a.server_s}


def main(argv=None):
    a, inputs = parse(sys.argv[1:] if argv is None else argv)
    m = model(**inputs)
    top = a.max_ratio or max(4, int(math.ceil(m["saturation_ratio"] * 1.5)))
    ratios = sorted({1, *range(max(1, top // 10), top + 1, max(1, top // 10)), int(m["saturation_ratio"]), top})
    m["curve"] = [{"clients_per_server": r, "t_sonic_s": t_sonic(m, r)} for r in ratios]
    if a.protodune:
        measured = PROTODUNE_MEASURED["processes"] / PROTODUNE_MEASURED["gpus"]
        m["measured_ratio"] = measured
        m["server_s_for_measured_ratio"] = m["t_ideal_s"] / measured
    if a.json:
        print(json.dumps({"inputs": inputs, **m}, indent=1))
        return 0
    print(f"t_ideal = {m['client_s']:.4g} (client) + {m['server_s']:.4g} (server) + {m['latency_s']:.4g} (latency)"
          f" = {m['t_ideal_s']:.4g} s per event")
    print(f"saturation point = optimal clients per server: t_ideal / t_GPU = {m['saturation_ratio']:.1f} : 1")
    if a.protodune:
        print(f"talk's measurement: flat up to {PROTODUNE_MEASURED['processes']} processes on "
              f"{PROTODUNE_MEASURED['gpus']} GPUs = {m['measured_ratio']:.1f} : 1 per GPU; the model gives that "
              f"ratio with t_GPU = t_ideal / {m['measured_ratio']:.1f} = {m['server_s_for_measured_ratio']:.2f} s "
              f"per event ({55000 / m['server_s_for_measured_ratio']:.0f} inferences/s for 55,000 patches)")
    print("clients per server | t_SONIC s per event")
    for row in m["curve"]:
        print(f"{row['clients_per_server']:>18} | {row['t_sonic_s']:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
