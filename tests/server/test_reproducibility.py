#!/usr/bin/env python3
"""Two kaas-servers on one model repository answer bit for bit alike, and as in-process kaas
(docs/reproducibility.md): one on openmp with 2 threads, one on tbb (serial in a build without
it); the measuring planner
(the default outside tests), no shared planner cache (as on two machines); zero-suppressed
patches of every occupancy, so some take the sparse plan and some the dense one; 8 clients over
both servers with dynamic batching, so a row is batched with whatever else arrived. The servers
share the model's plan file: one measures, the other reads its decisions.

Usage: test_reproducibility.py --server BIN --make-repository BIN --client-load BIN
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from server_fixture import KaasServer, check, failures, fleet_arguments, stop_all, write_repository  # noqa: E402


def mixed_patches(path):
    """48 patches: noise, zero-suppressed bands of several widths, a few hits, empty ones."""
    rng = np.random.default_rng(5)
    p = rng.uniform(-5, 15, size=(48, 48, 48, 1)).astype(np.float32)
    for i in range(48):
        if i % 4 == 1:
            width = 2 + i % 30
            p[i, :20] = 0
            p[i, 20 + width:] = 0
        if i % 4 == 2:
            p[i, rng.uniform(size=(48, 48)) >= 0.02 * (1 + i % 10)] = 0
        if i % 12 == 3:
            p[i] = 0
    np.save(path, p)


def main():
    args = fleet_arguments()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kaas-reproducibility-"))
    repo = tmp / "repo"
    write_repository(args.make_repository, repo)
    patches = tmp / "patches.npy"
    mixed_patches(patches)
    os.environ["KAAS_PLANNER"] = "measure"  # the tests' default is the fixed rules
    os.environ["KAAS_PLANNER_CACHE"] = "off"
    servers = []
    try:
        os.environ["OMP_NUM_THREADS"] = "2"
        # The second server on tbb where it is built (the kernels as oneTBB tasks), else serial.
        help_text = subprocess.run([args.server, "--help"], capture_output=True, text=True).stdout
        second = "tbb" if "tbb" in help_text else "serial"
        servers.append(KaasServer(args.server, repo, backend="openmp"))
        servers.append(KaasServer(args.server, repo, backend=second))
        addresses = ",".join(s.grpc_url for s in servers)
        plan_written = False
        for batch in (1, 5):
            run = subprocess.run(
                [args.client_load, "--servers", addresses, "--repository", str(repo),
                 "--patches", str(patches), "--clients", "8", "--batch", str(batch),
                 "--seconds", "2"], capture_output=True, text=True, timeout=300)
            check(run.returncode == 0, f"kaas-client-load batch {batch} exited with {run.returncode}: "
                  f"{run.stderr[-2000:]}")
            if run.returncode != 0:
                continue
            summary = json.loads(run.stdout.strip().splitlines()[-1])
            check(summary["failures"] == 0 and summary["calls"] > 0,
                  f"batch {batch}: {summary['calls']} calls, {summary['failures']} failed")
            plan_written = (repo / "emtrkmichelid" / "1" / "kaas_plan.tsv").is_file()
            check(summary["bitwise_equal_calls"] == summary["calls"],
                  f"batch {batch}: {summary['bitwise_equal_calls']} of {summary['calls']} answers "
                  f"bit for bit as in-process kaas (largest difference {summary['max_abs_difference']})")
    finally:
        stop_all(servers)
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [[line for line in s.output().splitlines()
              if "emtrkmichelid: sparse planner" in line] for s in servers]
    read = sum(any("the model's plan file" in line for line in ls) for ls in lines)
    check(all(len(ls) == 1 for ls in lines) and read == 1,
          f"one server measured the sparse plan's timings, the other read them: {lines}")
    check(plan_written, "the plan file beside the model")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
