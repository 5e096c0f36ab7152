#!/usr/bin/env python3
"""kaas-reco end to end against a kaas-server on loopback (small toy events: 128 wires x 1000
ticks, 2 muons and 1 shower per plane; events 0, 3 and 7 hold a Michel electron):
  - direct and remote give identical per-hit outputs, through images and through patches (the
    patches of an event over 1024 hits go as several requests);
  - 4 events in flight (direct and remote at once) give the outputs of remote one at a time;
  - a Michel working point chosen on validation events, then applied; bad files refused;
  - a too-short deadline is DEADLINE_EXCEEDED; an unknown model is NOT_FOUND at creation;
  - the server killed (SIGKILL) in the middle of a run: retries, then the fallback answers,
    no event is lost and the outputs are those of the clean run;
  - the truth-matched lines and tables are printed, and --display writes one PNG per plane and
    event (both 128-wire panels and the zoom side by side).
One kaas-server serves every remote run; the run that kills it comes last.

Usage: test_reco.py --reco BIN --server BIN --make-repository BIN
"""
import argparse
import json
import os
import pathlib
import re
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "server"))
from server_fixture import KaasServer, check, failures, write_repository  # noqa: E402

WIRES, TICKS = 128, 1000
SMALL = ["--wires", str(WIRES), "--ticks", str(TICKS), "--tracks", "2", "--showers", "1"]
EVENTS = 4  # the clean, in-flight and server-killed runs: events 0-3 (a Michel in 0 and 3)
VALIDATION_FIRST = 7  # --choose-working-point on events 7 and 8 (a Michel in 7)


# libgomp's default wait policy spins in every barrier: when another process (a parallel ctest,
# kaas-server beside kaas-reco) holds one of the cores, a team of 2 waits on its descheduled
# member and the inference gets several times slower (2 cores: 7x measured). Passive waiting
# changes no result; a caller's own setting is kept. kaas-server inherits it.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")


def event_outputs(text):
    """{(event, send): fingerprint} from kaas-reco's event lines."""
    found = {}
    for m in re.finditer(r"^event (\d+) \[(\w+)\]: .*; outputs ([0-9a-f]{16})", text, re.M):
        found[(int(m.group(1)), m.group(2))] = m.group(3)
    return found


def truth_counts(text):
    """{row: truth count} of the first truth-matched table ("| hits Michel | 34 | ..." rows)."""
    counts = {}
    for m in re.finditer(r"^\| (hits \w+|clusters \w+) \| (\d+) \|", text, re.M):
        counts.setdefault(m.group(1), int(m.group(2)))
    return counts


def reco(args, *extra, timeout=600):
    command = [args.reco, *SMALL, "--repository", str(args.repository_dir), *extra]
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    print(f"  [{time.monotonic() - start:.1f} s] kaas-reco {' '.join(extra)}", flush=True)
    return result.returncode, result.stdout, result.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reco", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kaas-reco-test-") as tmp:
        args.repository_dir = pathlib.Path(tmp) / "models"
        write_repository(args.make_repository, args.repository_dir)
        server = KaasServer(args.server, args.repository_dir)
        try:
            url = ["--server", server.grpc_url]
            displays = pathlib.Path(tmp) / "displays"
            rc, out, err = reco(args, *url, "--mode", "both", "--send", "image,patches", "--events", "2",
                                "--display", str(displays))
            print(out, err)
            truth = truth_counts(out)
            check(all(truth.get(f"hits {kind}", 0) > 0 for kind in ("track", "em", "Michel")),
                  f"the events hold track, EM (shower) and Michel hits: {truth}")
            hits = [int(h) for h in re.findall(r"^event \d+ \[patches\]: (\d+) hits", out, re.M)]
            check(any(h > 1024 for h in hits),
                  f"an event over the patch model's max_batch_size 1024 (several requests): {hits}")
            check(out.count("\n  truth: hits efficiency/purity: track ") == 4,
                  "a truth line under every event line")
            check(all(f"truth-matched, {send} (2 events" in out for send in ("image", "patches")),
                  "a truth-matched table per path")
            check(out.count("| hits Michel |") == 2 and out.count("| clusters track |") == 2,
                  "the tables have hit and cluster rows")
            pngs = sorted(p.name for p in displays.glob("*.png"))
            check(pngs == [f"event{e}_plane{p}.png" for e in range(2) for p in range(3)],
                  f"one display per event and plane: {pngs}")
            for png in displays.glob("*.png"):
                head = png.read_bytes()[:24]
                width, height = struct.unpack(">II", head[16:24])
                # Both WIRES-wide panels, axes, legend and the 64 x 6-pixel zoom beside them;
                # TICKS / 6 rows.
                check(head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR" and
                      width > 2 * WIRES + 64 * 6 and height > TICKS // 6,
                      f"{png.name}: a {width} x {height} PNG")
            check(out.count("% non-zero") == 2 and "patch occupancy: " in out,
                  "patch occupancy per event and in all")
            outputs = event_outputs(out)
            check(rc == 0, "both mode, image and patches: exit 0")
            check(len(outputs) == 4, "4 event lines (2 events x image, patches)")
            check(out.count("direct == remote") == 4, "direct == remote on every event and path")
            check("identical per-hit outputs on every event" in out, "summary says identical")
            check(all(outputs[(e, "image")] == outputs[(e, "patches")] for e in range(2)),
                  "image and patches paths give the same per-hit outputs")
            check("remote bytes sent, image / patches: 1/" in out, "bytes ratio reported")

            # The clean run: remote, one event at a time. The reference of the runs below.
            rc, sync_out, err = reco(args, *url, "--mode", "remote", "--events", str(EVENTS))
            sync = event_outputs(sync_out)
            check(rc == 0 and len(sync) == EVENTS, f"remote, one at a time: exit 0, {EVENTS} events " + err)
            check(all(sync[(e, "image")] == outputs[(e, "image")] for e in range(2)),
                  "remote one at a time == the first run on its events")
            # Direct and remote, EVENTS in flight each, in one run: each event's direct and remote
            # outputs compared bit for bit, and both equal to the clean run's.
            rc, async_out, err = reco(args, *url, "--mode", "both", "--events", str(EVENTS),
                                      "--async", str(EVENTS))
            check(rc == 0, f"direct and remote, {EVENTS} in flight: exit 0 " + err)
            check(async_out.count("direct == remote") == EVENTS,
                  f"{EVENTS} in flight: direct == remote on every event")
            check(event_outputs(async_out) == sync, f"{EVENTS} in flight == one at a time, all {EVENTS} events")

            # A Michel working point chosen on some events, then used on others.
            point = pathlib.Path(tmp) / "working_point.json"
            rc, out, err = reco(args, *url, "--mode", "remote", "--events", "2",
                                "--first-event", str(VALIDATION_FIRST), "--choose-working-point", str(point))
            chosen = json.loads(point.read_text()) if point.exists() else {}
            around = chosen.get("neighbourhood", {})
            check(rc == 0 and 0 < chosen.get("michel_threshold", 0) < 1 and chosen.get("michel_hits", 0) > 0 and
                  chosen.get("first_event") == VALIDATION_FIRST and
                  "Michel working point chosen on these events" in out
                  and around.get("radius_cm") == 4.0 and 0 < around.get("michel_threshold", 0) < 1,
                  f"--choose-working-point: {chosen}")
            rc, out, err = reco(args, *url, "--mode", "remote", "--events", "1", "--working-point", str(point))
            check(rc == 0 and "at the working point chosen on validation events (score > "
                  f"{chosen.get('michel_threshold', -1):.3f}" in out and
                  "(neighbourhood score (mean within 4.0 cm) > "
                  f"{around.get('michel_threshold', -1):.3f}" in out, "--working-point: the tags at it")
            rc, out, err = reco(args, *url, "--mode", "remote", "--events", "1", "--working-point", str(point),
                                "--michel-radius", "2")
            check(rc == 0 and "no neighbourhood working point for 2.0 cm" in out,
                  "--working-point chosen at another radius: said, not misapplied")
            point.write_text(json.dumps({**chosen, "neighbourhood": {**around, "michel_threshold": -1}}))
            rc, out, err = reco(args, "--mode", "direct", "--events", "1", "--working-point", str(point))
            check(rc == 2 and "neighbourhood.michel_threshold" in err, "a bad neighbourhood working point: " + err.strip())
            point.write_text(json.dumps({**chosen, "michel_threshold": 2}))
            rc, out, err = reco(args, "--mode", "direct", "--events", "1", "--working-point", str(point))
            check(rc == 2 and str(point) in err and "(0, 1)" in err, "a bad working point: " + err.strip())

            rc, out, err = reco(args, *url, "--mode", "remote", "--events", "1", "--deadline-ms", "1",
                                "--retries", "0")
            check(rc == 1 and "DEADLINE_EXCEEDED" in out, "1 ms deadline: DEADLINE_EXCEEDED, exit 1")
            check("events without an answer: 1" in out, "the event is reported unanswered")
            rc, out, err = reco(args, *url, "--mode", "remote", "--image-model", "no_such_model")
            check(rc == 1 and "NOT_FOUND" in err and "no_such_model" in err,
                  "unknown model: NOT_FOUND at creation: " + err.strip())

            # The server dies after the first event; the remaining events go to the fallback.
            command = [args.reco, *SMALL, "--repository", str(args.repository_dir), *url, "--mode", "both",
                       "--fallback", "--retries", "2", "--events", str(EVENTS)]
            start = time.monotonic()
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines = []
            for line in process.stdout:
                lines.append(line)
                if line.startswith("event 0 "):
                    server.process.kill()
                    server.process.wait()
            rc = process.wait(timeout=600)
            err = process.stderr.read()
            print(f"  [{time.monotonic() - start:.1f} s] kaas-reco, the server killed after event 0")
            out = "".join(lines)
            print(out, err)
            outputs = event_outputs(out)
            check(rc == 0, "server killed mid-run: exit 0")
            check(sorted(e for e, _ in outputs) == list(range(EVENTS)), "no event lost")
            check(out.count("direct == remote") == EVENTS, "outputs still identical on every event")
            check("answered by the fallback" in out and "3 attempts" in out,
                  "retried (3 attempts), then answered by the fallback")
            check(outputs == sync, "outputs equal those of the clean run")
        finally:
            server.stop()
    if failures:
        print(f"{len(failures)} checks failed: {failures}")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
