#!/usr/bin/env python3
"""Trains the EmTrkMichelId patch CNN on toy-event patches (kaas-toy-patches) with JAX on the CPU.

The architecture is the served one (models/emtrk_onnx_generator.h): conv 48 x 5 x 5 valid + ReLU,
flatten in channels-last order, dense 128 + ReLU, dense 32 + ReLU, a 3-way softmax head (track, em,
none) and a sigmoid Michel head. No dropout by default (--dropout puts it after the conv and the
first dense layer, as in the Keras original): one pass over the data does not overfit (the
validation loss stays below the training loss), the same training without it reached the same
Michel tag, and drawing its masks doubled the time of a step. Loss: 0.1 x cross-entropy(3) + 1.0 x binary cross-entropy(Michel) by default (the
original's MSE on the Michel sigmoid with --michel-loss mse); optimiser Adam (learning rate 0.001)
by default, or the original's SGD with Nesterov momentum 0.9 and learning rate 0.01
(--optimizer sgd). Fixed seed.

Writes to --out:
  weights/<tensor>.npy   the ONNX initializers in the served layout, named as in the graph with
                         '/' as '_' (conv2d_kernel [48, 1, 5, 5], dense_kernel [92928, 128], ...):
                         kaas-make-emtrk-model --weights turns them into model.onnx
  report.json            per-epoch losses and validation figures, the confusion matrix, timing
  loss.png, confusion.png
  check/                 64 validation patches and the trained network's outputs for them
The validation split is by event (the last --val-fraction of the events).
"""
import argparse
import functools
import json
import os
import sys
import time

import numpy as np

CLASSES = ("track", "em", "none")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="directory written by kaas-toy-patches")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--optimizer", choices=("adam", "sgd"), default="adam",
                   help="adam, or sgd (Nesterov momentum 0.9, as the original Keras training)")
    p.add_argument("--learning-rate", type=float, default=None,
                   help="default 0.001 for adam, 0.01 for sgd")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="dropout after the conv and the first dense layer (the Keras original: 0.2)")
    p.add_argument("--michel-loss", choices=("bce", "mse"), default="bce",
                   help="Michel head loss: binary cross-entropy, or the original's MSE")
    p.add_argument("--lr-decay", type=float, default=1.0,
                   help="multiply the learning rate by this after each epoch (1: constant)")
    p.add_argument("--lr-final", type=float, default=1.0,
                   help="decay the learning rate smoothly (exponentially, per step) to this "
                        "fraction of its start by the last step, on top of --lr-decay (1: none); "
                        "one pass over many events ends on small steps")
    p.add_argument("--val-fraction", type=float, default=0.2)
    p.add_argument("--max-seconds", type=float, default=0,
                   help="stop training after this many seconds (0: no limit)")
    p.add_argument("--seed", type=int, default=18)
    args = p.parse_args()
    if not 0 < args.lr_decay <= 1:
        sys.exit("train_toy_model: --lr-decay must be in (0, 1]")
    if not 0 < args.lr_final <= 1:
        sys.exit("train_toy_model: --lr-final must be in (0, 1]")
    if args.epochs < 1 or args.batch < 1:
        sys.exit("train_toy_model: --epochs and --batch must be at least 1")
    if not 0 <= args.val_fraction < 1:
        sys.exit("train_toy_model: --val-fraction must be in [0, 1)")
    return args


def load(data_dir):
    # The patches memory-mapped: ~9 KB each, 13 GB for 240 events; the page cache holds what
    # fits and the batches gather their rows from it.
    arrays = {k: np.load(os.path.join(data_dir, k + ".npy"), mmap_mode="r" if k == "patches" else None)
              for k in ("patches", "label", "michel", "event")}
    n = len(arrays["label"])
    if n == 0:
        sys.exit(f"train_toy_model: {data_dir} holds no patches")
    if arrays["patches"].shape[1:] != (48, 48, 1):
        sys.exit(f"train_toy_model: patches.npy has shape {arrays['patches'].shape}, "
                 "expected [N, 48, 48, 1]")
    for k in ("label", "michel", "event"):
        if len(arrays[k]) != n:
            sys.exit(f"train_toy_model: {k}.npy has {len(arrays[k])} entries, patches.npy {n}")
    if arrays["label"].min() < 0 or arrays["label"].max() > 2:
        sys.exit("train_toy_model: label.npy holds classes outside 0 (track), 1 (em), 2 (none)")
    return arrays


def split_by_event(events, val_fraction):
    unique = np.unique(events)
    n_val = max(1, int(round(len(unique) * val_fraction))) if len(unique) > 1 else 0
    val_events = unique[len(unique) - n_val:]
    is_val = np.isin(events, val_events)
    if n_val == 0:  # one event: validate on a tenth of its patches
        is_val = np.arange(len(events)) % 10 == 9
    return np.flatnonzero(~is_val), np.flatnonzero(is_val)


def main():
    args = parse_args()
    import jax
    import jax.numpy as jnp
    from tqdm import tqdm

    data = load(args.data)
    train_idx, val_idx = split_by_event(data["event"], args.val_fraction)
    if len(train_idx) < args.batch:
        sys.exit(f"train_toy_model: {len(train_idx)} training patches, fewer than one batch "
                 f"({args.batch})")
    print(f"train_toy_model: {len(train_idx)} training and {len(val_idx)} validation patches "
          f"({len(np.unique(data['event']))} events), jax {jax.__version__} on "
          f"{jax.devices()[0].platform}", flush=True)

    def glorot(key, shape, fan_in, fan_out):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return jax.random.uniform(key, shape, jnp.float32, -limit, limit)

    keys = jax.random.split(jax.random.PRNGKey(args.seed), 6)
    params = {  # conv kernel in HWIO (exported as OIHW)
        "conv2d/kernel": glorot(keys[0], (5, 5, 1, 48), 25, 48 * 25),
        "conv2d/bias": jnp.zeros(48),
        "dense/kernel": glorot(keys[1], (92928, 128), 92928, 128),
        "dense/bias": jnp.zeros(128),
        "dense_1/kernel": glorot(keys[2], (128, 32), 128, 32),
        "dense_1/bias": jnp.zeros(32),
        "em_trk_none_netout/kernel": glorot(keys[3], (32, 3), 32, 3),
        "em_trk_none_netout/bias": jnp.zeros(3),
        "michel_netout/kernel": glorot(keys[4], (32, 1), 32, 1),
        "michel_netout/bias": jnp.zeros(1),
    }
    dropout_key = keys[5]

    def dropout(x, key, training):
        if not training or args.dropout <= 0:
            return x
        keep = jax.random.bernoulli(key, 1.0 - args.dropout, x.shape)
        return jnp.where(keep, x / (1.0 - args.dropout), 0.0)

    # The 5 x 5 conv of a one-channel patch, as 25 shifted multiply-adds (XLA's CPU conv is ~2x
    # slower for one input channel); its kernel gradient as one matrix product of the patches'
    # 5 x 5 windows with the output gradient (the autodiff of the shifted sum is ~15x slower).
    # The input gradient is not needed: the patches are data.
    taps = [(i, j) for i in range(5) for j in range(5)]

    def windows(x):
        return [x[:, i:i + 44, j:j + 44, 0] for i, j in taps]

    @jax.custom_vjp
    def conv(kernel, x):
        return sum(w[..., None] * kernel[i, j, 0] for w, (i, j) in zip(windows(x), taps))

    def conv_fwd(kernel, x):
        return conv(kernel, x), x

    def conv_bwd(x, grad):
        cols = jnp.stack(windows(x), -1).reshape(-1, 25)
        return (cols.T @ grad.reshape(-1, 48)).reshape(5, 5, 1, 48), jnp.zeros_like(x)

    conv.defvjp(conv_fwd, conv_bwd)

    def forward(p, x, key, training):
        k1, k2 = jax.random.split(key)
        y = jax.nn.relu(conv(p["conv2d/kernel"], x) + p["conv2d/bias"])
        y = dropout(y.reshape(x.shape[0], -1), k1, training)  # (h, w, c) order, as Keras
        y = jax.nn.relu(y @ p["dense/kernel"] + p["dense/bias"])
        y = dropout(y, k2, training)
        y = jax.nn.relu(y @ p["dense_1/kernel"] + p["dense_1/bias"])
        logits = y @ p["em_trk_none_netout/kernel"] + p["em_trk_none_netout/bias"]
        michel = (y @ p["michel_netout/kernel"] + p["michel_netout/bias"])[:, 0]
        return logits, michel

    def loss_terms(p, x, label, michel, key, training):
        logits, michel_logit = forward(p, x, key, training)
        ce = -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), label[:, None], 1))
        if args.michel_loss == "bce":  # on the logit: stable where the sigmoid saturates
            michel_term = jnp.mean(jax.nn.softplus(michel_logit) - michel * michel_logit)
        else:
            michel_term = jnp.mean((jax.nn.sigmoid(michel_logit) - michel) ** 2)
        return 0.1 * ce + michel_term, (ce, michel_term)

    adam = args.optimizer == "adam"
    lr = args.learning_rate or (0.001 if adam else 0.01)
    momentum, beta1, beta2, eps = 0.9, 0.9, 0.999, 1e-7

    # The gradient and the update are two compiled steps, and the update is given the
    # parameters and optimiser state to overwrite in place (donated): re-allocating the
    # first dense layer's 48 MB arrays every step cost more than the update itself (one step
    # 336 -> 274 ms on 2 Zen 4 cores).
    gradient = jax.jit(jax.value_and_grad(loss_terms, has_aux=True), static_argnums=5)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def update(p, state, step, grads, lr):
        if adam:
            m, v = state
            m = jax.tree.map(lambda m, g: beta1 * m + (1 - beta1) * g, m, grads)
            v = jax.tree.map(lambda v, g: beta2 * v + (1 - beta2) * g * g, v, grads)
            scale = lr * jnp.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            p = jax.tree.map(lambda w, m, v: w - scale * m / (jnp.sqrt(v) + eps), p, m, v)
            return p, (m, v)
        velocity = jax.tree.map(lambda v, g: momentum * v - lr * g, state, grads)
        p = jax.tree.map(lambda w, v, g: w + momentum * v - lr * g, p, velocity, grads)  # Nesterov
        return p, velocity

    def train_step(p, state, step, x, label, michel, key, lr):
        (loss, _), grads = gradient(p, x, label, michel, key, True)
        p, state = update(p, state, step, grads, lr)
        return p, state, loss

    @jax.jit
    def predict(p, x):
        logits, michel_logit = forward(p, x, jax.random.PRNGKey(0), False)
        return jax.nn.softmax(logits), jax.nn.sigmoid(michel_logit)

    def evaluate(p, idx):
        probs, michel = [], []
        for start in range(0, len(idx), 512):
            b = idx[start:start + 512]
            c, m = predict(p, jnp.asarray(data["patches"][b]))
            probs.append(np.asarray(c))
            michel.append(np.asarray(m))
        probs, michel = np.concatenate(probs), np.concatenate(michel)
        label, truth_michel = data["label"][idx], data["michel"][idx]
        ce = float(-np.mean(np.log(np.maximum(probs[np.arange(len(idx)), label], 1e-12))))
        if args.michel_loss == "bce":
            m = np.clip(michel, 1e-7, 1 - 1e-7)
            michel_term = float(-np.mean(truth_michel * np.log(m) + (1 - truth_michel) * np.log(1 - m)))
        else:
            michel_term = float(np.mean((michel - truth_michel) ** 2))
        predicted = probs.argmax(1)
        confusion = np.zeros((3, 3), np.int64)
        np.add.at(confusion, (label, predicted), 1)
        tp = int(np.sum((michel > 0.5) & (truth_michel > 0.5)))
        return {
            "loss": 0.1 * ce + michel_term, "cross_entropy": ce, "michel_loss": michel_term,
            "accuracy": float(np.mean(predicted == label)),
            "michel_efficiency": tp / max(1, int(np.sum(truth_michel > 0.5))),
            "michel_purity": tp / max(1, int(np.sum(michel > 0.5))),
            "confusion": confusion.tolist(),
        }

    def zeros():  # separate buffers: each is donated
        return jax.tree.map(jnp.zeros_like, params)

    state = (zeros(), zeros()) if adam else zeros()
    step = 0
    rng = np.random.default_rng(args.seed)
    history, step_losses = [], []
    start = time.time()
    stopped_early = False
    steps_per_epoch = max(1, len(train_idx) // args.batch)  # the last partial batch is dropped
    total_steps = steps_per_epoch * args.epochs
    for epoch in range(args.epochs):
        order = rng.permutation(train_idx)
        batches = [order[i:i + args.batch] for i in range(0, len(order), args.batch)]
        if len(batches) > 1 and len(batches[-1]) < args.batch:
            batches.pop()  # one batch shape: one compilation
        bar = tqdm(batches, desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch",
                   file=sys.stderr, mininterval=1.0 if sys.stderr.isatty() else 15.0)
        epoch_losses = []
        for b in bar:
            dropout_key, key = jax.random.split(dropout_key)
            step += 1
            params, state, loss = train_step(
                params, state, float(step), jnp.asarray(data["patches"][b]),
                jnp.asarray(data["label"][b]), jnp.asarray(data["michel"][b]), key,
                lr * args.lr_decay ** epoch * args.lr_final ** ((step - 1) / max(1, total_steps - 1)))
            epoch_losses.append(float(loss))
            bar.set_postfix(loss=f"{np.mean(epoch_losses[-20:]):.4f}", refresh=False)
            if args.max_seconds and time.time() - start > args.max_seconds:
                stopped_early = True
                break
        bar.close()
        step_losses.extend(epoch_losses)
        val = evaluate(params, val_idx) if len(val_idx) else {}
        history.append({"epoch": epoch + 1, "steps": len(epoch_losses),
                        "train_loss": float(np.mean(epoch_losses)) if epoch_losses else None,
                        "seconds": time.time() - start, **val})
        if val:
            print(f"epoch {epoch + 1}: train loss {history[-1]['train_loss']:.4f}, validation "
                  f"loss {val['loss']:.4f}, accuracy {val['accuracy']:.3f}, Michel efficiency "
                  f"{val['michel_efficiency']:.3f} purity {val['michel_purity']:.3f}", flush=True)
        if stopped_early:
            print(f"train_toy_model: WARNING: stopped after {args.max_seconds:.0f} s (--max-seconds) "
                  f"in epoch {epoch + 1}: this machine trains slower than the budget assumes, and "
                  "the model is not the one data/emtrk-toy/manifest.json measured", flush=True)
            break
    seconds = time.time() - start

    weights_dir = os.path.join(args.out, "weights")
    os.makedirs(weights_dir, exist_ok=True)
    for name, value in params.items():
        value = np.asarray(value, np.float32)
        if name == "conv2d/kernel":
            value = value.transpose(3, 2, 0, 1)  # HWIO -> OIHW, ONNX Conv's layout
        np.save(os.path.join(weights_dir, name.replace("/", "_") + ".npy"),
                np.ascontiguousarray(value))
    # A few patches with the trained network's answers, for checking the exported ONNX model
    # (train_toy_model.sh runs it with kaas-infer and compares).
    check_idx = (val_idx if len(val_idx) else train_idx)[:64]
    check_dir = os.path.join(args.out, "check")
    os.makedirs(check_dir, exist_ok=True)
    softmax, michel = predict(params, jnp.asarray(data["patches"][check_idx]))
    np.save(os.path.join(check_dir, "main_input.npy"), data["patches"][check_idx])
    np.save(os.path.join(check_dir, "softmax.npy"), np.asarray(softmax, np.float32))
    np.save(os.path.join(check_dir, "michel.npy"), np.asarray(michel, np.float32)[:, None])
    report = {"patches": {"train": int(len(train_idx)), "validation": int(len(val_idx))},
              "seed": args.seed, "batch": args.batch, "optimizer": args.optimizer,
              "michel_loss": args.michel_loss,
              "learning_rate": lr, "lr_decay_per_epoch": args.lr_decay, "lr_final": args.lr_final,
              "epochs_run": len(history), "stopped_early": stopped_early,
              "train_seconds": seconds, "jax": jax.__version__, "history": history,
              "step_losses": step_losses}
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    plot(report, args.out)
    print(f"train_toy_model: {len(step_losses)} steps in {seconds:.0f} s, wrote {weights_dir}, "
          f"report.json, loss.png, confusion.png")


def plot(report, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.asarray(report["step_losses"])
    fig, ax = plt.subplots(figsize=(6, 4))
    if len(steps):
        window = max(1, min(50, len(steps) // 10))
        smooth = np.convolve(steps, np.ones(window) / window, mode="valid")
        ax.plot(np.arange(len(steps)), steps, alpha=0.3, label="training (per batch)")
        ax.plot(np.arange(window - 1, len(steps)), smooth, label=f"training ({window}-batch mean)")
    per_epoch = np.cumsum([h["steps"] for h in report["history"]])
    val = [h.get("loss") for h in report["history"]]
    if all(v is not None for v in val) and len(val):
        ax.plot(per_epoch, val, "o-", label="validation")
    ax.set_xlabel("batch")
    ax.set_ylabel(f"0.1 CE + {report['michel_loss'].upper()}(Michel)")
    ax.set_title("EmTrkMichelId on toy events")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "loss.png"), dpi=100)
    plt.close(fig)

    if not report["history"] or "confusion" not in report["history"][-1]:
        return
    confusion = np.asarray(report["history"][-1]["confusion"], float)
    rows = confusion / np.maximum(confusion.sum(1, keepdims=True), 1)
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.imshow(rows, cmap="Blues", vmin=0, vmax=1)
    for i in range(3):
        for j in range(3):
            ax.text(j, i, f"{rows[i, j]:.2f}\n({int(confusion[i, j])})", ha="center",
                    va="center", color="white" if rows[i, j] > 0.5 else "black", fontsize=8)
    ax.set_xticks(range(3), CLASSES)
    ax.set_yticks(range(3), CLASSES)
    ax.set_xlabel("predicted")
    ax.set_ylabel("truth")
    ax.set_title("validation (fraction of each truth row)")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "confusion.png"), dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
