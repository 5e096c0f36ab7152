#!/usr/bin/python3
"""Peer for bench_knn: all-points kNN with scikit-learn's KD-tree on the benchmark's points.

Usage: sklearn_knn.py POINTS.f32 N D K EVENTS REPEATS THREADS
POINTS.f32 holds N x D float32 values (row-major); the N points form EVENTS equal events.
Per repeat: build one KDTree per event and query every point of it (k = K, the point itself
included), over THREADS joblib threads (sklearn's NearestNeighbors, algorithm="kd_tree").
Prints one line: the REPEATS wall times in seconds, separated by spaces.
"""
import sys
import time

import numpy as np
from sklearn.neighbors import NearestNeighbors


def main():
    path, n, d, k, events, repeats, threads = sys.argv[1:8]
    n, d, k, events, repeats, threads = map(int, (n, d, k, events, repeats, threads))
    points = np.fromfile(path, dtype=np.float32, count=n * d).reshape(n, d)
    bounds = np.linspace(0, n, events + 1).astype(np.int64)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for e in range(events):
            event = points[bounds[e]:bounds[e + 1]]
            nn = NearestNeighbors(n_neighbors=k, algorithm="kd_tree", n_jobs=threads).fit(event)
            nn.kneighbors(event)
        seconds.append(time.perf_counter() - start)
    print(" ".join(f"{t:.9f}" for t in seconds))


if __name__ == "__main__":
    main()
