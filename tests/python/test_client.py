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
