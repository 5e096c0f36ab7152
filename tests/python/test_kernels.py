"""kaas.dense / softmax / conv2d on numpy arrays against float64 numpy references, on every
backend that runs here; Model.load."""
import numpy as np
import pytest

import kaas


@pytest.mark.parametrize("backend", kaas.backends())
@pytest.mark.parametrize("activation", ["none", "relu", "sigmoid"])
def test_dense(backend, activation):
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(37, 70), (70, 24), (24,)])
    y = kaas.dense(x, w, b, activation=activation, backend=backend)
    ref = x.astype(np.float64) @ w.astype(np.float64) + b
    ref = {"none": ref, "relu": np.maximum(ref, 0), "sigmoid": 1 / (1 + np.exp(-ref))}[activation]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(kaas.dense(x, w, backend=backend), x.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", kaas.backends())
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax(backend, axis):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((5, 7, 11)) * 10).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    ref = e / e.sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(kaas.softmax(x, axis=axis, backend=backend), ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(kaas.softmax(x, axis=axis, log=True, backend=backend), np.log(ref),
                               rtol=1e-5, atol=1e-5)


def conv_reference(x, w, b, stride, pads, groups):
    n, c, h, wd = x.shape
    co, ci, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - kh) // stride[0] + 1
    ow = (wd + pads[1] + pads[3] - kw) // stride[1] + 1
    y = np.zeros((n, co, oh, ow))
    per = co // groups
    for o in range(co):
        g = o // per
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * ci:(g + 1) * ci, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw]
                y[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3)) + b[o]
    return y


@pytest.mark.parametrize("backend", kaas.backends())
def test_conv2d_nchw_and_nhwc(backend):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    ref = conv_reference(x, w, b, (2, 1), (1, 1, 0, 1), 2)
    y = kaas.conv2d(x, w, b, stride=(2, 1), pads=(1, 1, 0, 1), groups=2, backend=backend)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    y_nhwc = kaas.conv2d(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), w, b, stride=(2, 1),
                         pads=(1, 1, 0, 1), groups=2, layout="NHWC", activation="relu", backend=backend)
    np.testing.assert_allclose(y_nhwc, np.maximum(ref, 0).transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


def test_kernel_errors():
    with pytest.raises(kaas.InvalidArgument, match="dense"):
        kaas.dense(np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32))
    with pytest.raises(kaas.InvalidArgument, match="activation"):
        kaas.dense(np.zeros((2, 3), np.float32), np.zeros((3, 5), np.float32), activation="gelu")
    with pytest.raises(kaas.InvalidArgument, match="axis"):
        kaas.softmax(np.zeros((2, 3), np.float32), axis=2)
    with pytest.raises(kaas.InvalidArgument, match="layout"):
        kaas.conv2d(np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 1, 3, 3), np.float32), layout="CHWN")
    with pytest.raises(TypeError):  # a 3-D weight is not a conv2d weight
        kaas.conv2d(np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 3, 3), np.float32))


def test_model_load_runs_emtrkmichelid(repository):
    model = kaas.Model.load(repository, "emtrkmichelid", backend="serial")
    assert model.signature["max_batch"] > 0
    x = np.random.default_rng(5).uniform(0, 1, size=(3, 48, 48, 1)).astype(np.float32)
    out = model.run({"main_input": x})
    assert out["em_trk_none_netout/Softmax"].shape == (3, 3)
    direct = kaas.Client.direct(str(repository), "emtrkmichelid", backend="serial").run({"main_input": x})
    for name in out:
        assert np.array_equal(out[name], direct[name])
