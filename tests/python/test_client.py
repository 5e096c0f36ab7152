"""kaas.Client from Python: direct == remote on EmTrkMichelId, deadlines, errors, fallback."""
import numpy as np
import pytest

import kaas

EMTRK = "emtrkmichelid"


def patches(count, seed=4):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 1, size=(count, 48, 48, 1)).astype(np.float32)


def test_direct_equals_remote(repository, server):
    direct = kaas.Client.direct(str(repository), EMTRK, backend="serial")
    remote = kaas.Client.remote(server.grpc_url, EMTRK)
    assert direct.signature == remote.signature
    assert [name for name, _, _ in direct.signature["inputs"]] == ["main_input"]
    x = patches(16)
    a, b = direct.run({"main_input": x}), remote.run({"main_input": x}, deadline_ms=60_000)
    assert sorted(a) == sorted(b) == sorted(name for name, _, _ in direct.signature["outputs"])
    for name in a:
        assert a[name].dtype == np.float32 and a[name].shape[0] == 16
        assert np.array_equal(a[name], b[name]), name
    softmax = a["em_trk_none_netout/Softmax"]
    np.testing.assert_allclose(softmax.sum(axis=1), 1.0, rtol=1e-5)
    only = direct.run({"main_input": x}, outputs=["michel_netout/Sigmoid"])
    assert list(only) == ["michel_netout/Sigmoid"]


def test_outputs_are_not_copies(repository):
    direct = kaas.Client.direct(str(repository), EMTRK, backend="serial")
    out = direct.run({"main_input": patches(2)})["em_trk_none_netout/Softmax"]
    assert out.base is not None and not out.flags.owndata  # a view of the kaas result


def test_a_server_list_is_balanced_and_retried(repository, server):
    """The address may list servers; a dead one in the list costs retries, not the call."""
    remote = kaas.Client.remote(f"{server.grpc_url},127.0.0.1:1", EMTRK, retries=4, backoff_ms=10)
    x = patches(3)
    expected = kaas.Client.direct(str(repository), EMTRK, backend="serial").run({"main_input": x})
    for _ in range(4):
        answer = remote.run({"main_input": x}, deadline_ms=60_000)
        for name in expected:
            assert np.array_equal(answer[name], expected[name]), name


def test_errors(repository, server):
    direct = kaas.Client.direct(str(repository), EMTRK, backend="serial")
    with pytest.raises(kaas.InvalidArgument) as e:
        direct.run({"main_input": patches(2).astype(np.float64)})
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(kaas.InvalidArgument):
        direct.run({"main_input": np.zeros((2, 47, 48, 1), np.float32)})
    with pytest.raises(kaas.NotFound):
        direct.run({"no_such_input": patches(1)})
    with pytest.raises(kaas.NotFound):
        kaas.Client.direct(str(repository), "no_such_model")
    with pytest.raises(kaas.NotFound):
        kaas.Client.remote(server.grpc_url, "no_such_model")
    with pytest.raises(kaas.Unavailable):
        kaas.Client.remote("127.0.0.1:1", EMTRK, ready_timeout_ms=500)
    remote = kaas.Client.remote(server.grpc_url, EMTRK, retries=0)
    with pytest.raises(kaas.DeadlineExceeded) as e:
        remote.run({"main_input": patches(512)}, deadline_ms=1)
    assert isinstance(e.value, TimeoutError)


def test_fallback_runs_in_process_when_the_server_is_gone(repository):
    from server_fixture import KaasServer
    from conftest import kaas_binary
    gone = KaasServer(kaas_binary("kaas-server"), repository, backend="serial")
    remote = kaas.Client.remote(gone.grpc_url, EMTRK, retries=1, backoff_ms=1,
                                fallback_repository=str(repository), fallback_backend="serial")
    assert gone.stop() == 0
    x = patches(4)
    reference = kaas.Client.direct(str(repository), EMTRK, backend="serial").run({"main_input": x})
    answer = remote.run({"main_input": x})
    for name in reference:
        assert np.array_equal(answer[name], reference[name])


KNN_HALF = """name: "{name}"
backend: "kaas"
max_batch_size: 0
parameters {{ key: "kaas_model" value {{ string_value: "knn" }} }}
parameters {{ key: "k" value {{ string_value: "16" }} }}
input [ {{ name: "points" data_type: {points} dims: [ -1, -1 ] }} ]
output [ {{ name: "distances" data_type: {distances} dims: [ -1, 16 ] }} ]
"""


def knn_half_repository(root):
    """knn (FP32) beside knn_fp16 (FP16 points and distances) and knn_bf16_out (BF16 distances)."""
    root.mkdir(exist_ok=True)
    for name, points, distances in (("knn_fp16", "TYPE_FP16", "TYPE_FP16"),
                                    ("knn_bf16_out", "TYPE_FP32", "TYPE_BF16")):
        (root / name / "1").mkdir(parents=True, exist_ok=True)
        (root / name / "config.pbtxt").write_text(KNN_HALF.format(name=name, points=points, distances=distances))
    return root


def test_float16_in_and_out(repository, server, tmp_path):
    """numpy float16 <-> FP16: the model runs on the widened points, distances come back rounded to
    float16 (round to nearest even, as numpy's astype), in process and through kaas-server."""
    half = knn_half_repository(tmp_path / "half")
    points = np.random.default_rng(3).normal(size=(30, 3)).astype(np.float16)
    splits = np.array([0, 12, 30], np.int64)
    fp32 = kaas.Client.direct(str(repository), "knn", backend="serial")
    reference = fp32.run({"points": points.astype(np.float32), "row_splits": splits})
    direct = kaas.Client.direct(str(half), "knn_fp16", backend="serial")
    assert direct.signature["inputs"][0][:2] == ("points", "FP16")
    got = direct.run({"points": points, "row_splits": splits})
    assert got["distances"].dtype == np.float16 and got["indices"].dtype == np.int32
    assert np.array_equal(got["indices"], reference["indices"])
    want = reference["distances"].astype(np.float16)
    assert np.array_equal(got["distances"].view(np.uint16), want.view(np.uint16))
    with pytest.raises(kaas.InvalidArgument, match="datatype"):
        direct.run({"points": points.astype(np.float32), "row_splits": splits})
    with pytest.raises(kaas.Unimplemented, match="BF16"):
        kaas.Client.direct(str(half), "knn_bf16_out", backend="serial").run(
            {"points": points.astype(np.float32), "row_splits": splits})

    from server_fixture import KaasServer
    from conftest import kaas_binary
    served = KaasServer(kaas_binary("kaas-server"), half, backend="serial")
    try:
        remote = kaas.Client.remote(served.grpc_url, "knn_fp16")
        answer = remote.run({"points": points, "row_splits": splits})
        assert np.array_equal(answer["distances"].view(np.uint16), want.view(np.uint16))
        assert np.array_equal(answer["indices"], reference["indices"])
    finally:
        assert served.stop() == 0


@pytest.mark.skipif("tbb" not in kaas.backends(), reason="built without the tbb backend")
def test_the_tbb_backend_gives_serials_bytes(repository):
    """The reproducibility contract from Python: the tbb backend answers with serial's bytes."""
    x = patches(16, seed=9)
    on_serial = kaas.Client.direct(str(repository), EMTRK, backend="serial").run({"main_input": x})
    on_tbb = kaas.Client.direct(str(repository), EMTRK, backend="tbb").run({"main_input": x})
    for name in on_serial:
        assert np.array_equal(on_serial[name], on_tbb[name]), name
