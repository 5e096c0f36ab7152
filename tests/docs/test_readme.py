#!/usr/bin/env python3
"""README stays true (issue 49): at most 15 KB; its two set-up commands are the scripts CI runs;
every docs/ page is linked from it; every relative link of README and docs/ resolves; and every
binary in its binaries table is built here and takes each flag the table names (its --help).

Usage: test_readme.py --build-dir DIR
"""
import argparse
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_BYTES = 15 * 1024
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def section(text, heading):
    """The text under a '## heading' up to the next '## '."""
    m = re.search(r"^## " + re.escape(heading) + r".*?$(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def links(path):
    text = path.read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # not in code blocks
    return re.findall(r"\]\(([^)\s]+)\)", text)


def binaries(text):
    """(binary, [flags]) per row of the README's binaries table."""
    rows = []
    for line in section(text, "Binaries").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.match(r"`([a-z][\w.-]*)`", cells[0]) if len(cells) >= 3 else None
        if m:
            rows.append((m.group(1), re.findall(r"`(--[a-z][\w-]*)", cells[-1])))
    return rows


def find_binary(build, name):
    for p in build.rglob(name):
        if p.is_file() and p.stat().st_mode & 0o111:
            return p
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build-dir", type=pathlib.Path, required=True)
    build = p.parse_args().build_dir
    readme = (ROOT / "README.md").read_text()
    size = len(readme.encode())
    check(size <= MAX_BYTES, f"README.md is {size} bytes (<= {MAX_BYTES})")
    commands = re.findall(r"^bash (scripts/\S+)", section(readme, "Two commands"), re.M)
    check(commands == ["scripts/run.sh", "scripts/test.sh"],
          f"the set-up block names the run and the test command: {commands}")
    check(all((ROOT / c).is_file() for c in commands), "both scripts exist")
    check("scripts/test.sh" in (ROOT / ".ci" / "run").read_text(), ".ci/run runs the test command")
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
    linked = set(links(ROOT / "README.md"))
    missing = [p for p in pages if p not in {l.split("#")[0] for l in linked}]
    check(not missing, f"every docs/ page is linked from README ({len(pages)} pages; missing {missing})")
    broken = []
    for doc in [ROOT / "README.md"] + [ROOT / p for p in pages]:
        for target in links(doc):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            if not (doc.parent / target.split("#")[0]).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    check(not broken, f"relative links resolve ({len(broken)} broken: {broken[:5]})")
    rows = binaries(readme)
    check(len(rows) >= 8, f"README lists the binaries ({len(rows)} rows)")
    for name, flags in rows:
        path = find_binary(build, name)
        if path is None:
            check(False, f"{name}: built in {build}")
            continue
        if name.endswith(".so") or not flags:
            check(True, f"{name}: built ({path.relative_to(build)})")
            continue
        out = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=60)
        help_text = out.stdout + out.stderr
        unknown = [f for f in flags if f not in help_text]
        check(out.returncode == 0 and not unknown,
              f"{name} --help: exit {out.returncode}, takes {', '.join(flags) or 'no flags listed'}"
              + (f" (not in --help: {unknown})" if unknown else ""))
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
