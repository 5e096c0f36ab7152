#!/usr/bin/env python3
"""EmTrkMichelId in PyTorch, the peer of kaas-kernel-bench on the same device.

The network of models/emtrk_onnx_generator.h (conv 48 x 5x5 + ReLU, Keras flatten order, dense 128
ReLU, dense 32 ReLU, softmax(3) and sigmoid(1) heads) on the weights kaas-kernel-bench
--save-weights wrote (the .npy names of kaas-make-emtrk-model --weights). First the inputs kaas
saved run through it in fp32 (TF32 off) and the outputs are compared with kaas's; then every
batch and precision is timed: fp32 (TF32 off), tf32 (TF32 on for cuDNN and matmul) and bf16 (the
model and input in bfloat16), with torch.backends.cudnn.benchmark on, channels-last activations
and inference_mode. The median time of a call on device-resident inputs, synchronised, as
kaas-kernel-bench measures its own.

  torch_emtrk.py --weights DIR [--device cuda] [--batches 1,256,1024,4096]
                 [--precisions fp32,tf32,bf16] [--seconds S] [--tsv FILE]
"""
import argparse
import pathlib
import statistics
import sys
import time

import numpy as np
import torch

PATCH, KERNEL, FILTERS = 48, 5, 48
CONV_OUT = PATCH - KERNEL + 1
FLAT = CONV_OUT * CONV_OUT * FILTERS
FLOPS_PER_PATCH = (2 * CONV_OUT * CONV_OUT * FILTERS * KERNEL * KERNEL + 2 * FLAT * 128
                   + 2 * 128 * 32 + 2 * 32 * 3 + 2 * 32)
NAMES = ["conv2d_kernel", "conv2d_bias", "dense_kernel", "dense_bias", "dense_1_kernel",
         "dense_1_bias", "em_trk_none_netout_kernel", "em_trk_none_netout_bias",
         "michel_netout_kernel", "michel_netout_bias"]


class EmTrkMichelId(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, FILTERS, KERNEL)
        self.dense = torch.nn.Linear(FLAT, 128)
        self.dense_1 = torch.nn.Linear(128, 32)
        self.em_trk_none = torch.nn.Linear(32, 3)
        self.michel = torch.nn.Linear(32, 1)
        with torch.no_grad():
            self.conv.weight.copy_(torch.from_numpy(w["conv2d_kernel"]))
            self.conv.bias.copy_(torch.from_numpy(w["conv2d_bias"]))
            # Keras flattens (h, w, c); the conv output here is (c, h, w): reorder W1's rows once
            # instead of permuting every activation.
            w1 = w["dense_kernel"].reshape(CONV_OUT, CONV_OUT, FILTERS, 128).transpose(2, 0, 1, 3)
            self.dense.weight.copy_(torch.from_numpy(np.ascontiguousarray(w1.reshape(FLAT, 128).T)))
            self.dense.bias.copy_(torch.from_numpy(w["dense_bias"]))
            for layer, name in [(self.dense_1, "dense_1"), (self.em_trk_none, "em_trk_none_netout"),
                                (self.michel, "michel_netout")]:
                layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(w[name + "_kernel"].T)))
                layer.bias.copy_(torch.from_numpy(w[name + "_bias"]))

    def forward(self, x):  # x: [n, 1, 48, 48]
        h = torch.relu(self.conv(x))
        h = torch.relu(self.dense(h.flatten(1)))
        h = torch.relu(self.dense_1(h))
        return torch.softmax(self.em_trk_none(h), dim=1), torch.sigmoid(self.michel(h))


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def median_seconds(call, device, seconds):
    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()
    call()  # warm-up: cudnn.benchmark picks its algorithms here
    sync()
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < seconds and len(times) < 1000):
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=pathlib.Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batches", default="1,256,1024,4096")
    parser.add_argument("--precisions", default="fp32,tf32,bf16")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--tsv", type=pathlib.Path)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_emtrk: torch.cuda.is_available() is False (torch %s)" % torch.__version__)
    device = torch.device(args.device)
    batches = [int(b) for b in args.batches.split(",")]
    precisions = args.precisions.split(",")
    for p in precisions:
        if p not in ("fp32", "tf32", "bf16"):
            sys.exit(f"torch_emtrk: unknown precision {p!r} (fp32, tf32, bf16)")
    torch.backends.cudnn.benchmark = True
    weights = {n: np.load(args.weights / f"{n}.npy").astype(np.float32) for n in NAMES}
    model = EmTrkMichelId(weights).to(device).eval()
    model = model.to(memory_format=torch.channels_last)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    rows = []

    # The same outputs as kaas on kaas's inputs (fp32, TF32 off).
    check = "-"
    if (args.weights / "check_input.npy").exists():
        x = torch.from_numpy(np.load(args.weights / "check_input.npy")).permute(0, 3, 1, 2)
        want_a = np.load(args.weights / "check_em_trk_none.npy")
        want_b = np.load(args.weights / "check_michel.npy")
        set_tf32(False)
        with torch.inference_mode():
            a, b = model(x[:64].to(device).contiguous(memory_format=torch.channels_last))
        check = max(float(np.abs(a.cpu().numpy() - want_a[:64]).max()),
                    float(np.abs(b.cpu().numpy() - want_b[:64]).max()))
        print(f"torch_emtrk: {name}, torch {torch.__version__}; fp32 outputs vs kaas on 64 patches: "
              f"max |difference| {check:.2e}")
        if check > 1e-4:
            print("torch_emtrk: FAIL: torch and kaas disagree on the same network", file=sys.stderr)

    rng = np.random.default_rng(20261125)
    largest = max(batches)
    host = rng.uniform(-5, 15, size=(largest, 1, PATCH, PATCH)).astype(np.float32)
    for precision in precisions:
        set_tf32(precision == "tf32")
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        m = model.to(dtype)
        full = torch.from_numpy(host).to(device=device, dtype=dtype)
        for batch in batches:
            x = full[:batch].contiguous(memory_format=torch.channels_last)
            with torch.inference_mode():
                seconds = median_seconds(lambda: m(x), device, args.seconds)
            rows.append(("torch", "emtrk", precision, f"batch {batch}", batch, seconds,
                         FLOPS_PER_PATCH * batch / seconds / 1e9,
                         check if precision == "fp32" else "-", f"torch {torch.__version__} on {name}"))
            print(f"torch   | emtrk  | {precision:5} | batch {batch:<20} | {seconds * 1e3:10.3f} | "
                  f"{batch / seconds:12.0f} | {FLOPS_PER_PATCH * batch / seconds / 1e9:8.1f}")
        model = m.to(torch.float32)
    if args.tsv:
        with open(args.tsv, "w") as f:
            f.write("backend\tbench\tprecision\tshape\titems\tseconds\tgflops\tcheck\tnote\n")
            for r in rows:
                f.write("\t".join(str(v) for v in r) + "\n")
    return 1 if isinstance(check, float) and check > 1e-4 else 0


if __name__ == "__main__":
    sys.exit(main())
