#!/usr/bin/env python3
"""kaas as an installed package: examples/consumer is configured and built against the install
prefix only, run in process and against the installed kaas-server, and the prefix is checked to
hold nothing that points back into the source or build tree.

  test_consumer.py --prefix P --source-dir S --work-dir W
"""
import argparse
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "server"))
from server_fixture import KaasServer, check, failures  # noqa: E402


def run(cmd, **kwargs):
    print("+", " ".join(map(str, cmd)), flush=True)
    result = subprocess.run(cmd, text=True, capture_output=True, **kwargs)
    if result.returncode != 0:
        print(result.stdout, result.stderr, sep="\n")
        raise SystemExit(f"failed ({result.returncode}): {cmd[0]}")
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefix", type=pathlib.Path, required=True)
    parser.add_argument("--source-dir", type=pathlib.Path, required=True)
    parser.add_argument("--build-dir", type=pathlib.Path, required=True, help="kaas's own build")
    parser.add_argument("--work-dir", type=pathlib.Path, required=True)
    args = parser.parse_args()
    prefix, work = args.prefix.resolve(), args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)

    # The package layout: generic names only under include/kaas, the CMake package, pkg-config.
    include = prefix / "include"
    check(sorted(p.name for p in include.iterdir()) == ["kaas"], f"include/ holds only kaas/: {list(include.iterdir())}")
    for needed in ["lib/cmake/kaas/kaasConfig.cmake", "lib/cmake/kaas/kaasConfigVersion.cmake",
                   "lib/pkgconfig/kaas.pc", "include/kaas/kernels/knn.h",
                   "include/kaas/client/remote_client.h", "bin/kaas-server"]:
        check((prefix / needed).exists(), f"installed: {needed}")
    for internal in ["include/kaas/backends/kernel.h", "include/kaas/models/onnx_graph.h",
                     "include/kaas/models/onnx_ops/op_def.h", "include/kaas/server_adapter/server/server.h"]:
        check(not (prefix / internal).exists(), f"internal header not installed: {internal}")
    # Relocatable: no installed text file names the source or the build tree.
    for root in (args.source_dir.resolve(), args.build_dir.resolve()):
        hits = subprocess.run(["grep", "-rIl", str(root), str(prefix)], text=True, capture_output=True).stdout.split()
        check(not hits, f"no installed text file mentions {root}: {hits[:5]}")

    # Configure and build the consumer with the prefix as the only kaas location.
    build = work / "consumer-build"
    run(["cmake", "-S", args.source_dir / "examples" / "consumer", "-B", build, "-G", "Ninja",
         f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", build])
    consumer = build / "kaas-consumer"
    # pkg-config gives the same library set to a build without CMake.
    pc = run(["pkg-config", "--cflags", "--libs", "kaas"],
             env={"PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig"), "PATH": "/usr/bin:/bin"}).stdout.split()
    includes = [os.path.realpath(f[2:]) for f in pc if f.startswith("-I")]
    check(includes == [str(prefix / "include")] and "-lkaas_client" in pc, f"pkg-config kaas: {pc}")
    # ... and is enough to build the consumer without CMake.
    run(["c++", "-O1", args.source_dir / "examples" / "consumer" / "consumer.cc", "-o", work / "consumer-pc", *pc])

    repo = work / "repository"
    run([prefix / "bin" / "kaas-make-repository", "--repository", repo])
    direct = run([consumer, repo, "--backend", "serial"]).stdout
    print(direct)
    check("kNN on serial" in direct and "EmTrkMichelId:" in direct, "consumer, in process")
    def summary(text):  # without the timing lines
        return [line for line in text.splitlines() if not line.startswith("  ")]
    check(summary(run([work / "consumer-pc", repo, "--backend", "serial"]).stdout) == summary(direct),
          "the consumer built with pkg-config prints the same results")

    server = KaasServer(prefix / "bin" / "kaas-server", repo, backend="serial")
    try:
        remote = run([consumer, repo, "--backend", "serial", "--server", server.grpc_url]).stdout
        print(remote)
        check("direct vs remote: max |score difference| 0" in remote, "consumer, direct == remote")
    finally:
        check(server.stop() == 0, "installed kaas-server stops cleanly")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
