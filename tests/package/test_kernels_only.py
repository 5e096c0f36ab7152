#!/usr/bin/env python3
"""A kernels-only kaas install as an external's build sees it: the prefix holds the kernels
library, its headers and the CMake package and nothing of the models or the client;
examples/consumer_kernels (find_package(kaas COMPONENTS kernels)) configures, builds and runs
against it; asking the same install for the client component fails at configure time with a
message that names the component.

  test_kernels_only.py --build-dir B --source-dir S --work-dir W
"""
import argparse
import pathlib
import shutil
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, expect_ok=True):
    result = subprocess.run([str(c) for c in cmd], text=True, capture_output=True)
    if expect_ok and result.returncode != 0:
        print(result.stdout, result.stderr, sep="\n")
        sys.exit(f"failed ({result.returncode}): {' '.join(map(str, cmd))}")
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", type=pathlib.Path, required=True)
    parser.add_argument("--source-dir", type=pathlib.Path, required=True)
    parser.add_argument("--work-dir", type=pathlib.Path, required=True)
    args = parser.parse_args()
    work = args.work_dir.resolve()
    shutil.rmtree(work, ignore_errors=True)
    prefix = work / "prefix"
    run(["cmake", "--install", args.build_dir, "--prefix", prefix])

    libs = sorted(p.name for p in (prefix / "lib").glob("libkaas_*.so"))
    check(libs == ["libkaas_kernels.so"], f"only the kernels library is installed: {libs}")
    cmake_dir = prefix / "lib" / "cmake" / "kaas"
    check((cmake_dir / "kaasKernelsTargets.cmake").exists(), "kaasKernelsTargets.cmake installed")
    check(not list(cmake_dir.glob("kaasModels*")) and not list(cmake_dir.glob("kaasClient*")),
          "no models or client targets files")
    check((prefix / "include/kaas/kernels/conv_dense_heads.h").exists(), "kernel headers installed")
    check(not (prefix / "include/kaas/models").exists(), "no model headers")
    check((prefix / "bin/kaas-self-check").exists(), "kaas-self-check installed")

    build = work / "consumer"
    run(["cmake", "-S", args.source_dir / "examples/consumer_kernels", "-B", build,
         f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", build])
    out = run([build / "kaas-consumer-kernels"]).stdout
    print(out.strip())
    check("ok" in out, "the consumer's kNN on the installed kernels")

    # The same install asked for the client: a clear configure error, not a missing target later.
    wants_client = work / "wants-client"
    wants_client.mkdir(parents=True)
    (wants_client / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(wants_client LANGUAGES CXX)\n"
        "find_package(kaas 0.5 REQUIRED COMPONENTS kernels client)\n")
    result = run(["cmake", "-S", wants_client, "-B", wants_client / "build",
                  f"-DCMAKE_PREFIX_PATH={prefix}"], expect_ok=False)
    text = result.stdout + result.stderr
    check(result.returncode != 0 and "component 'client' is not in this install" in text,
          "COMPONENTS client fails naming the component")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("kernels-only package: every check passed")


if __name__ == "__main__":
    main()
