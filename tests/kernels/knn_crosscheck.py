#!/usr/bin/python3
"""Cross-check of kaas::knn against scikit-learn (exact KD-tree) and, when importable, FAISS
(IndexFlatL2), on ragged batches of random and clustered points.

Usage: knn_crosscheck.py PATH/TO/knn_crosscheck_dump
The dump helper runs kaas on every available CPU backend with both methods. Continuous random
coordinates make exact ties (other than a point with itself) practically absent; where the
references order two neighbours differently, the swap is accepted only when their distances
agree within the float tolerance.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from sklearn.neighbors import NearestNeighbors

try:
    import faiss
except ImportError:  # FAISS is optional
    faiss = None


def make_case(rng, dims, sizes, clustered):
    events = []
    for n in sizes:
        if clustered:
            centres = rng.uniform(-10, 10, size=(4, dims))
            pts = centres[rng.integers(0, 4, size=n)] + rng.normal(0, 0.3, size=(n, dims))
        else:
            pts = rng.uniform(-1, 1, size=(n, dims))
        events.append(pts.astype(np.float32))
    points = np.concatenate(events) if events else np.zeros((0, dims), np.float32)
    splits = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return points, splits


def reference(points, splits, k, library):
    """Rows in kaas' layout: self first, then by distance; -1 / inf padding."""
    n = len(points)
    idx = np.full((n, k), -1, np.int64)
    dist = np.full((n, k), np.inf, np.float64)
    for e in range(len(splits) - 1):
        lo, hi = int(splits[e]), int(splits[e + 1])
        if hi == lo:
            continue
        event = points[lo:hi]
        kk = min(k, hi - lo)
        if library == "sklearn":
            d, i = NearestNeighbors(n_neighbors=kk, algorithm="kd_tree").fit(event).kneighbors(event)
            d = d.astype(np.float64) ** 2
        else:
            index = faiss.IndexFlatL2(event.shape[1])
            index.add(np.ascontiguousarray(event))
            d, i = index.search(np.ascontiguousarray(event), kk)
            d = d.astype(np.float64)
        for q in range(hi - lo):  # put the query itself first (references may not)
            row_i, row_d = list(i[q]), list(d[q])
            if q in row_i:
                at = row_i.index(q)
                row_i.pop(at)
                row_d.pop(at)
            else:
                row_i.pop()
                row_d.pop()
            idx[lo + q, :kk] = [lo + q] + [lo + j for j in row_i]
            dist[lo + q, :kk] = [0.0] + row_d
    return idx, dist


def compare(name, idx, dist, ref_idx, ref_dist, points, rtol, atol):
    scale = float(np.max(np.sum(points.astype(np.float64) ** 2, axis=1))) if len(points) else 1.0
    finite = np.isfinite(ref_dist)
    bad_pad = np.count_nonzero((idx == -1) != ~finite) + np.count_nonzero(np.isinf(dist) != ~finite)
    tol = rtol * ref_dist[finite] + atol * scale
    bad_dist = np.count_nonzero(np.abs(dist[finite] - ref_dist[finite]) > tol)
    # A different index is an equal-distance swap only if the distances agree.
    differ = (idx != ref_idx) & finite
    ref0 = np.where(finite, ref_dist, 0)
    bad_idx = np.count_nonzero(differ & (np.abs(dist - ref0) > rtol * ref0 + atol * scale))
    ok = bad_pad == 0 and bad_dist == 0 and bad_idx == 0
    print(f"{'ok  ' if ok else 'FAIL'} {name}: padding {bad_pad}, distances {bad_dist}, "
          f"indices {bad_idx} (equal-distance swaps {np.count_nonzero(differ)})")
    return ok


def main():
    dump = sys.argv[1]
    rng = np.random.default_rng(2024)
    cases = [
        (3, 16, [500, 0, 1, 15, 16, 17, 3000], False),
        (4, 16, [20000], False),
        (6, 64, [4000, 63, 64, 65, 0, 2500], True),
        (2, 256, [1200, 300], True),
        (16, 8, [700, 5], False),
    ]
    all_ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for case, (dims, k, sizes, clustered) in enumerate(cases):
            points, splits = make_case(rng, dims, sizes, clustered)
            points.tofile(os.path.join(tmp, "points.f32"))
            splits.tofile(os.path.join(tmp, "splits.i64"))
            prefix = os.path.join(tmp, f"case{case}")
            run = subprocess.run(
                [dump, os.path.join(tmp, "points.f32"), str(len(points)), str(dims),
                 os.path.join(tmp, "splits.i64"), str(len(sizes)), str(k), prefix],
                check=True, capture_output=True, text=True)
            outputs = run.stdout.split()
            refs = {"sklearn": reference(points, splits, k, "sklearn")}
            if faiss is not None:
                refs["faiss"] = reference(points, splits, k, "faiss")
            for out in outputs:
                idx = np.fromfile(out + ".idx", np.int32).reshape(-1, k).astype(np.int64)
                dist = np.fromfile(out + ".dist", np.float32).reshape(-1, k).astype(np.float64)
                for lib, (ref_idx, ref_dist) in refs.items():
                    # FAISS computes |x|^2 + |y|^2 - 2xy in float: an absolute error near zero.
                    rtol, atol = (1e-5, 1e-7) if lib == "sklearn" else (1e-4, 1e-5)
                    label = f"D={dims} K={k} events={sizes} {os.path.basename(out)} vs {lib}"
                    all_ok &= compare(label, idx, dist, ref_idx, ref_dist, points, rtol, atol)
    print("knn cross-check:", "PASSED" if all_ok else "FAILED")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
