#!/usr/bin/env python3
"""The results file of scripts/gpu_check.sh: gpu-<device>.md and .json from its step log, the
kaas-kernel-bench and PyTorch rows (tab-separated) and nvidia-smi's device fields. EmTrkMichelId
rows are paired by batch: kaas fp32 against PyTorch fp32 and TF32, kaas bf16 against PyTorch
bf16, with the issue's goals (batch 4096: >= 1.0x PyTorch, >= 1M patches/s in fp32).
"""
import argparse
import csv
import datetime
import json
import pathlib
import platform
import re
import subprocess


def read_rows(path):
    p = pathlib.Path(path)
    if not p.exists() or p.stat().st_size == 0:
        return []
    with open(p) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for r in rows:
        r["items"] = int(r["items"])
        r["seconds"] = float(r["seconds"])
        r["gflops"] = float(r["gflops"])
        r["per_second"] = r["items"] / r["seconds"]
    return rows


def command_output(cmd):
    try:
        return subprocess.run(cmd, text=True, capture_output=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def cpu_model():
    lscpu = command_output(["lscpu"])
    model = re.search(r"Model name:\s*(.*)", lscpu)
    flags = re.search(r"Flags:\s*(.*)", lscpu)
    simd = [f for f in (flags.group(1).split() if flags else [])
            if f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16")]
    return (model.group(1).strip() if model else platform.processor()) + " (" + " ".join(simd) + ")"


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", required=True)
    parser.add_argument("--kaas", required=True)
    parser.add_argument("--torch", required=True)
    parser.add_argument("--device-json", default="{}")
    parser.add_argument("--total-seconds", type=int, required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--cpu-only", action="store_true")
    args = parser.parse_args()

    device = json.loads(args.device_json)
    steps = []
    with open(args.steps) as f:
        for line in f:
            name, status, seconds, detail = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
            steps.append({"step": name, "status": status, "seconds": int(seconds), "detail": detail})
    kaas_rows, torch_rows = read_rows(args.kaas), read_rows(args.torch)
    nvcc = command_output(["nvcc", "--version"]).splitlines()
    commit = command_output(["git", "rev-parse", "--short", "HEAD"])
    name = device.get("name") or ("CPU only: " + cpu_model())

    # EmTrkMichelId: per batch, kaas per precision beside PyTorch per precision.
    def rate(rows, precision, batch):
        for r in rows:
            if r["bench"] == "emtrk" and r["precision"] == precision and r["shape"] == f"batch {batch}":
                return r["per_second"]
        return None

    batches = sorted({int(r["shape"].split()[1]) for r in kaas_rows + torch_rows if r["bench"] == "emtrk"})
    emtrk = []
    for b in batches:
        row = {"batch": b}
        for p in ("fp32", "bf16", "fp16"):
            row[f"kaas_{p}"] = rate(kaas_rows, p, b)
        for p in ("fp32", "tf32", "bf16"):
            row[f"torch_{p}"] = rate(torch_rows, p, b)
        for mine, peer in (("fp32", "fp32"), ("fp32", "tf32"), ("bf16", "bf16")):
            k, t = row[f"kaas_{mine}"], row[f"torch_{peer}"]
            row[f"ratio_{mine}_vs_torch_{peer}"] = k / t if k and t else None
        emtrk.append(row)
    big = next((r for r in emtrk if r["batch"] == 4096), None)
    goals = []
    if big:
        goals = [
            ("batch 4096 fp32 >= 1.0x PyTorch fp32 (cuDNN)", big["ratio_fp32_vs_torch_fp32"], 1.0),
            ("batch 4096 fp32 >= 1M patches/s", big["kaas_fp32"] and big["kaas_fp32"] / 1e6, 1.0),
            ("batch 4096 bf16 >= 1.0x PyTorch bf16", big["ratio_bf16_vs_torch_bf16"], 1.0),
        ]
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit, "device": device, "device_name": name, "cpu_only": args.cpu_only,
        "host_cpu": cpu_model(), "nvcc": nvcc[-1] if nvcc else "", "total_seconds": args.total_seconds,
        "steps": steps, "emtrk": emtrk, "kaas_rows": kaas_rows, "torch_rows": torch_rows,
        "goals": [{"goal": g, "value": v, "reached": v is not None and v >= need} for g, v, need in goals],
    }

    def fmt(v, spec="{:.0f}"):
        return "-" if v is None else spec.format(v)

    md = [f"# scripts/gpu_check.sh on {name}", "",
          f"{result['date']}, kaas {commit}; host CPU {result['host_cpu']}; {result['nvcc']}", ""]
    if device:
        md += [f"Device: {device.get('name')}, driver {device.get('driver')}, compute capability "
               f"{device.get('compute_capability')}, max clocks SM {device.get('max_sm_clock')} / memory "
               f"{device.get('max_memory_clock')}, {device.get('memory')}", ""]
    md += [f"Whole script: {args.total_seconds} s (goal <= 600 s on a 16-core node, build included).", "",
           "| step | result | s | detail |", "|---|---|---:|---|"]
    md += [f"| {s['step']} | {s['status']} | {s['seconds']} | {s['detail']} |" for s in steps]
    md += ["", "## EmTrkMichelId (patches/s; kaas: fused conv-dense-heads at the kernel level)", "",
           "| batch | kaas fp32 | kaas bf16 | kaas fp16 | PyTorch fp32 | PyTorch TF32 | PyTorch bf16 | "
           "kaas/PyTorch fp32 | kaas fp32/PyTorch TF32 | kaas/PyTorch bf16 |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in emtrk:
        md.append(f"| {r['batch']} | {fmt(r['kaas_fp32'])} | {fmt(r['kaas_bf16'])} | {fmt(r['kaas_fp16'])} | "
                  f"{fmt(r['torch_fp32'])} | {fmt(r['torch_tf32'])} | {fmt(r['torch_bf16'])} | "
                  f"{fmt(r['ratio_fp32_vs_torch_fp32'], '{:.2f}x')} | "
                  f"{fmt(r['ratio_fp32_vs_torch_tf32'], '{:.2f}x')} | "
                  f"{fmt(r['ratio_bf16_vs_torch_bf16'], '{:.2f}x')} |")
    checks = [f"{r['precision']} batch {r['shape'].split()[1]}: {float(r['check']):.1e}"
              for r in kaas_rows if r["bench"] == "emtrk"]
    md += ["", "Largest |difference| of the first patches' outputs from a double-precision forward "
           "pass: " + "; ".join(checks) + "."]
    if torch_rows and torch_rows[0]["check"] not in ("-", ""):
        md.append(f"PyTorch fp32 vs kaas fp32 on the same 64 patches: max |difference| "
                  f"{float(torch_rows[0]['check']):.1e}.")
    if goals:
        md += ["", "| goal | value | reached |", "|---|---:|---|"]
        md += [f"| {g['goal']} | {fmt(g['value'], '{:.2f}')} | {'yes' if g['reached'] else 'no'} |"
               for g in result["goals"]]
    knn = [r for r in kaas_rows if r["bench"] == "knn"]
    if knn:
        md += ["", "## kNN (K = 16, D = 3)", "", "| points | backend | median ms | points/s | rows differing from serial |",
               "|---|---|---:|---:|---:|"]
        md += [f"| {r['shape']} | {r['backend']} | {r['seconds'] * 1e3:.2f} | {r['per_second']:.0f} | "
               f"{'-' if float(r['check']) < 0 else int(float(r['check']))} |" for r in knn]
    out = pathlib.Path(args.out_dir)
    stem = "gpu-check-cpu-only" if args.cpu_only else "gpu-" + slug(device.get("name", "unknown"))
    (out / f"{stem}.md").write_text("\n".join(md) + "\n")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"gpu_results: {out / stem}.md and .json")


if __name__ == "__main__":
    main()
