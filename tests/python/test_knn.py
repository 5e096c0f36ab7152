"""kaas.knn from Python against scikit-learn on ragged events; errors as kaas exceptions."""
import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

import kaas


def ragged_events(rng, sizes, dims):
    splits = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    points = rng.uniform(0, 1, size=(splits[-1], dims)).astype(np.float32)
    return points, splits


@pytest.mark.parametrize("backend", kaas.backends())
@pytest.mark.parametrize("method", ["auto", "brute_force", "binned"])
def test_knn_matches_sklearn_on_ragged_events(backend, method):
    rng = np.random.default_rng(11)
    points, splits = ragged_events(rng, [300, 1, 0, 700, 57], 4)
    k = 16
    indices, distances = kaas.knn(points, splits, k, method=method, backend=backend)
    assert indices.shape == (len(points), k) and indices.dtype == np.int32
    assert distances.shape == (len(points), k) and distances.dtype == np.float32
    for first, end in zip(splits[:-1], splits[1:]):
        n = end - first
        if n == 0:
            continue
        found = min(k, n)
        event = points[first:end].astype(np.float64)
        ref_distances, ref_indices = NearestNeighbors(n_neighbors=found).fit(event).kneighbors(event)
        # Squared Euclidean distances, ascending; the point itself first.
        np.testing.assert_allclose(distances[first:end, :found], ref_distances**2, rtol=1e-5, atol=1e-6)
        assert (indices[first:end, 0] == np.arange(first, end)).all()
        # Indices: the same neighbour sets, except where the last place is a tie in float32 (kaas
        # then keeps the lower index; scikit-learn compares in float64).
        ours = indices[first:end, :found] - first
        for row in np.where((np.sort(ours, axis=1) != np.sort(ref_indices, axis=1)).any(axis=1))[0]:
            only_ours = np.setdiff1d(ours[row], ref_indices[row])
            boundary = ref_distances[row, -1] ** 2
            own = np.sum((event[only_ours] - event[row]) ** 2, axis=1)
            assert np.allclose(own, boundary, rtol=1e-6, atol=1e-7), (row, only_ours, own, boundary)
        assert (indices[first:end, found:] == -1).all()
        assert np.isinf(distances[first:end, found:]).all()


def test_knn_outputs_own_their_memory_and_inputs_are_not_copied():
    rng = np.random.default_rng(3)
    points, splits = ragged_events(rng, [50], 3)
    indices, distances = kaas.knn(points, splits, 4)
    assert indices.flags.c_contiguous and indices.base is not None  # owned by the kaas result
    # A non-contiguous view is accepted (converted), with the same answer as its copy.
    strided = np.zeros((50, 6), np.float32)
    strided[:, ::2] = points
    again, _ = kaas.knn(strided[:, ::2], splits, 4)
    assert (again == indices).all()


def test_knn_errors_are_kaas_exceptions():
    points = np.zeros((10, 3), np.float32)
    splits = np.array([0, 10], np.int64)
    with pytest.raises(kaas.InvalidArgument) as e:
        kaas.knn(points, splits, 0)
    assert e.value.code == "INVALID_ARGUMENT" and isinstance(e.value, ValueError)
    with pytest.raises(kaas.InvalidArgument, match="row_splits"):
        kaas.knn(points, np.array([0, 5, 4, 10], np.int64), 3)
    with pytest.raises(kaas.InvalidArgument, match="method"):
        kaas.knn(points, splits, 3, method="kd_tree")
    with pytest.raises(kaas.NotFound) as e:
        kaas.knn(points, splits, 3, backend="no_such_backend")
    assert e.value.code == "NOT_FOUND" and isinstance(e.value, LookupError)
