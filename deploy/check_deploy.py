#!/usr/bin/env python3
"""Keeps deploy/ from rotting: the recipes cannot be built or deployed in CI (no container engine,
no cluster), so every kaas path, flag and metric they use is checked against the real thing.
  - `cmake --install` of the build into a temporary prefix gives Triton's layout
    (backends/kaas/libtriton_kaas.so, RUNPATH $ORIGIN) and every /opt/kaas/<path> the recipes use;
  - every kaas-server flag in the KServe runtime is in `kaas-server --help`, every tritonserver
    flag in `tritonserver --help`, every --backend-config=kaas key is one the backend reads;
  - deploy/triton-repository equals what `kaas-make-repository --for triton` writes;
  - tritonserver started with the installed backend directory and the recipe's backend configs
    serves that repository, and both servers export the autoscaling metrics.

Usage: check_deploy.py --build-dir DIR
"""
import argparse
import atexit
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "server"))
from server_fixture import KaasServer, TritonServer, check, failures, tritonserver_binary  # noqa: E402

BACKEND_CONFIG_KEYS = {"default-backend", "threads", "default-max-batch-size"}
METRICS = ("nv_inference_queue_duration_us", "nv_inference_request_success")


def flags(text):
    """The --flags a recipe passes (comment lines left out)."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", code))


def read_metrics(host, port, seconds=30):
    """The metrics page on host:port. tritonserver answers /v2/health/ready before its
    metrics endpoint listens, so a refused connection is retried until `seconds` pass."""
    deadline = time.time() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as r:
                return r.read().decode()
        except urllib.error.URLError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kaas-deploy-check-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # the install and repositories: 320 MB
    prefix = tmp / "prefix"
    subprocess.run(["cmake", "--install", args.build_dir, "--prefix", str(prefix)], check=True,
                   stdout=subprocess.DEVNULL)
    backend = prefix / "backends" / "kaas" / "libtriton_kaas.so"
    check(backend.is_file(), f"installed in Triton's layout: {backend.relative_to(prefix)}")
    runpath = subprocess.run(["readelf", "-d", str(backend)], capture_output=True, text=True).stdout
    check("$ORIGIN" in runpath, "installed backend has RUNPATH $ORIGIN")

    recipes = {p: p.read_text() for p in [HERE / "triton-kaas" / "Dockerfile", *sorted((HERE / "kserve").glob("*.yaml"))]}
    for path, text in recipes.items():
        for used in sorted(set(re.findall(r"/opt/kaas/([\w./-]+)", text))):
            check((prefix / used).exists(), f"{path.name}: /opt/kaas/{used} is in the install")

    server_bin = prefix / "bin" / "kaas-server"
    server_help = subprocess.run([str(server_bin), "--help"], capture_output=True, text=True).stdout
    for flag in sorted(flags(recipes[HERE / "kserve" / "kaas-server.yaml"])):
        check(flag in server_help, f"kaas-server.yaml: {flag} is a kaas-server flag")
    help_run = subprocess.run([str(tritonserver_binary()), "--help"], capture_output=True, text=True)
    triton_help = help_run.stdout + help_run.stderr
    triton_text = recipes[HERE / "kserve" / "triton-kaas.yaml"] + recipes[HERE / "triton-kaas" / "Dockerfile"]
    triton_flags = {f for f in flags(triton_text) if f not in ("--from", "--no-install-recommends", "--no-cache-dir",
                                                               "--build", "--install", "--prefix")}
    for flag in sorted(triton_flags):
        check(flag in triton_help, f"triton recipes: {flag} is a tritonserver flag")
    backend_configs = sorted(set(re.findall(r"--backend-config=kaas,([\w-]+)=(\w*)", triton_text)))
    for key, _ in backend_configs:
        check(key in BACKEND_CONFIG_KEYS, f"--backend-config=kaas,{key}: a key the kaas backend reads")

    repo = tmp / "repo"
    subprocess.run([str(prefix / "bin" / "kaas-make-repository"), "--repository", str(repo), "--for", "triton"],
                   check=True, stdout=subprocess.DEVNULL)
    for config in sorted((HERE / "triton-repository").glob("*/config.pbtxt")):
        generated = repo / config.parent.name / "config.pbtxt"
        check(generated.exists() and generated.read_text() == config.read_text(),
              f"triton-repository/{config.parent.name}/config.pbtxt == kaas-make-repository --for triton")

    extra = [f"--backend-config=kaas,{k}={v}" for k, v in backend_configs]
    triton = TritonServer(repo, prefix / "backends", extra)
    try:
        for name in ("emtrkmichelid", "knn", "michel_from_image"):
            with urllib.request.urlopen(f"http://{triton.http_url}/v2/models/{name}/ready", timeout=10) as r:
                check(r.status == 200, f"tritonserver with the installed backend: {name} READY")
        check("ignoring unknown backend config" not in triton.output(), "the recipe's backend configs are all read")
        text = read_metrics(triton.host, triton.metrics_port)
        check(all(m in text for m in METRICS), f"tritonserver exports {', '.join(METRICS)}")
    finally:
        check(triton.stop() == 0, "tritonserver stopped cleanly")
    kaas_repo = tmp / "kaas-repo"
    subprocess.run([str(prefix / "bin" / "kaas-make-repository"), "--repository", str(kaas_repo)], check=True,
                   stdout=subprocess.DEVNULL)
    kaas = KaasServer(server_bin, kaas_repo)
    try:
        text = read_metrics(kaas.host, kaas.metrics_port)
        check(all(m in text for m in METRICS), f"installed kaas-server exports {', '.join(METRICS)}")
    finally:
        check(kaas.stop() == 0, "kaas-server stopped cleanly")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
