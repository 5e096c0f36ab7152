#!/usr/bin/python3
"""Python peers for bench_knn: all-points exact kNN on the benchmark's points.

Usage: knn_peers.py METHOD POINTS.f32 SPLITS.i64 D K REPEATS THREADS
METHOD: kd_tree or ball_tree (scikit-learn NearestNeighbors, n_jobs=THREADS), faiss_flat
(FAISS IndexFlatL2, exact, THREADS OpenMP threads), pykdtree (pykdtree's KDTree, leaf size 16,
queries over THREADS OpenMP threads) or ckdtree (scipy.spatial.cKDTree, leaf size 16, workers =
THREADS). POINTS.f32 holds N x D float32 values
(row-major), SPLITS.i64 the E + 1 event boundaries. Per repeat and event: build the index on the
event's points, then query every point of it (k = K, the point itself included).
Prints one line per repeat: "build_seconds query_seconds" (summed over the events).
Exits 3 when the method's package is missing (the benchmark then skips the row).
"""
import os
import sys
import time

import numpy as np


def index_builder(method, threads):
    if method in ("kd_tree", "ball_tree"):
        try:
            from sklearn.neighbors import NearestNeighbors
        except ImportError:
            sys.exit(3)

        def build(points, k):
            return NearestNeighbors(n_neighbors=k, algorithm=method, n_jobs=threads).fit(points)

        return build, lambda index, points, k: index.kneighbors(points)
    if method == "faiss_flat":
        try:
            import faiss
        except ImportError:
            sys.exit(3)
        faiss.omp_set_num_threads(threads)

        def build(points, k):
            index = faiss.IndexFlatL2(points.shape[1])
            index.add(points)
            return index

        return build, lambda index, points, k: index.search(points, k)
    if method == "pykdtree":
        os.environ["OMP_NUM_THREADS"] = str(threads)  # read when the extension loads
        try:
            from pykdtree.kdtree import KDTree
        except ImportError:
            sys.exit(3)

        def build(points, k):
            return KDTree(points, leafsize=16)

        return build, lambda index, points, k: index.query(points, k=k)
    if method == "ckdtree":
        try:
            from scipy.spatial import cKDTree
        except ImportError:
            sys.exit(3)

        def build(points, k):
            return cKDTree(points, leafsize=16)

        return build, lambda index, points, k: index.query(points, k=k, workers=threads)
    raise SystemExit(f"unknown method {method!r}: expected kd_tree, ball_tree, faiss_flat, "
                     "pykdtree or ckdtree")


def main():
    method, points_path, splits_path, d, k, repeats, threads = sys.argv[1:8]
    d, k, repeats, threads = map(int, (d, k, repeats, threads))
    build, query = index_builder(method, threads)
    points = np.fromfile(points_path, dtype=np.float32).reshape(-1, d)
    splits = np.fromfile(splits_path, dtype=np.int64)
    for _ in range(repeats):
        build_s = query_s = 0.0
        for e in range(len(splits) - 1):
            event = np.ascontiguousarray(points[splits[e]:splits[e + 1]])
            if len(event) == 0:
                continue
            start = time.perf_counter()
            index = build(event, min(k, len(event)))
            built = time.perf_counter()
            query(index, event, min(k, len(event)))
            build_s += built - start
            query_s += time.perf_counter() - built
        print(f"{build_s:.9f} {query_s:.9f}", flush=True)


if __name__ == "__main__":
    main()
