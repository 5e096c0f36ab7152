#!/usr/bin/env python3
"""No C++ function over 80 lines (issue 48's rule), counted by lizard (PyPI, in .venv) as the
whole function, blank and comment lines included. Exempt: the kernels' inner loops, i.e. the
single-source kernel bodies (kernels/*.kern.cc, compiled once per backend and for the GPUs) and
the host SIMD paths (kernels/cpu/), whose loop nests stay whole so the compilers keep their
accumulators in registers. Everything else that kaas builds is checked: the library layers,
tools, benchmarks, examples, bindings, fuzz targets and tests.

Usage: test_function_length.py [--max-lines N]
"""
import argparse
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKED = ["backends", "kernels", "models", "cases", "common", "server_adapter", "tools", "bench",
           "examples", "python", "fuzz", "tests"]
EXEMPT = ["kernels/*.kern.cc", "kernels/cpu/*"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-lines", type=int, default=80)
    args = parser.parse_args()
    for pattern in EXEMPT:  # an exemption that matches nothing has gone stale
        if not list(ROOT.glob(pattern)):
            sys.exit(f"test_function_length: the exemption {pattern} matches no file")
    command = [sys.executable, "-m", "lizard", "--languages", "cpp", "--warnings_only",
               "--length", str(args.max_lines), "--CCN", "1000000", "--arguments", "1000000"]
    for pattern in EXEMPT:
        command += ["--exclude", f"./{pattern}"]
    command += [f"./{d}" for d in CHECKED if (ROOT / d).is_dir()]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    long_functions = [line for line in result.stdout.splitlines() if "warning:" in line]
    if result.returncode not in (0, 1) or (result.returncode == 1) != bool(long_functions):
        sys.exit(f"test_function_length: lizard failed (exit {result.returncode}):\n"
                 f"{result.stdout}{result.stderr}")
    if long_functions:
        print(f"functions over {args.max_lines} lines (split them; kernels' inner loops are exempt):")
        print("\n".join(long_functions))
        sys.exit(1)
    print(f"test_function_length: no function over {args.max_lines} lines in {', '.join(CHECKED)}")


if __name__ == "__main__":
    main()
