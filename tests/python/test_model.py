"""kaas.Model on EmTrkMichelId: equal to kaas-infer on the same model and patches, and within
1e-5 of onnxruntime (the independent reference)."""
import subprocess

import numpy as np
import pytest

import kaas
from conftest import kaas_binary

EMTRK = "emtrkmichelid"


def adc_like_patches(count, seed=2027):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-5.0, 15.0, size=(count, 48, 48, 1)).astype(np.float32)
    x[:, :, :5, :] = 0.0  # outside the plane, as patch extraction writes it
    return x


@pytest.fixture(scope="module")
def patches():
    return adc_like_patches(24)


@pytest.fixture(scope="module")
def model_run(repository, patches):
    model = kaas.Model.load(repository, EMTRK, backend="serial")
    assert [name for name, _, _ in model.signature["inputs"]] == ["main_input"]
    return model.run({"main_input": patches})


def test_model_run_equals_kaas_infer(repository, patches, model_run, tmp_path):
    # The same max batch gives kaas-infer the same fused plan (slab rows per pass), so the
    # results agree bit for bit.
    max_batch = kaas.Model.load(repository, EMTRK, backend="serial").signature["max_batch"]
    np.save(tmp_path / "main_input.npy", patches)
    subprocess.run([kaas_binary("kaas-infer"), "--model", repository / EMTRK / "1" / "model.onnx",
                    "--backend", "serial", "--input", f"main_input={tmp_path / 'main_input.npy'}",
                    "--batch", str(max_batch), "--output-dir", tmp_path / "out"], check=True,
                   stdout=subprocess.DEVNULL)
    for name, got in model_run.items():
        want = np.load(tmp_path / "out" / (name.replace("/", "_") + ".npy"))
        assert got.shape == want.shape, name
        assert np.array_equal(got, want), f"{name}: max diff {np.abs(got - want).max()}"


def test_model_run_matches_onnxruntime(repository, patches, model_run):
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(repository / EMTRK / "1" / "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    assert sorted(names) == sorted(model_run)
    for name, want in zip(names, session.run(None, {"main_input": patches})):
        got = model_run[name]
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5, err_msg=name)


def test_precision_parameter_runs_bf16_within_the_accuracy_bound(repository, patches, model_run):
    bf16 = kaas.Model.load(repository, EMTRK, backend="serial", parameters={"precision": "bf16"})
    got = bf16.run({"main_input": patches})
    for name, want in model_run.items():
        assert got[name].dtype == np.float32  # the served outputs stay as declared
        assert not np.array_equal(got[name], want), f"{name}: not run in bf16"
        np.testing.assert_allclose(got[name], want, atol=0.02, rtol=0)
    with pytest.raises(kaas.InvalidArgument, match="precision: expected fp32, bf16 or fp16"):
        kaas.Model.load(repository, EMTRK, backend="serial", parameters={"precision": "fp8"})
