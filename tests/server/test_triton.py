#!/usr/bin/env python3
"""libtriton_kaas.so in the real Triton server (tritonserver 2.51 from PyPI nvidia-pytriton), on
127.0.0.1 with free ports, against tritonclient over gRPC and HTTP:
  - the default repository (kaas-make-repository --for triton) loads with the kaas backend;
  - outputs are bit-identical to kaas-server and to in-process kaas (kaas-infer) for the CNN at
    batch 1, 5 and 256, for ragged kNN events (also checked against numpy) and for a
    michel_from_image plane;
  - Triton's dynamic batcher joins requests (fewer executions than requests) and results do not
    depend on batch composition;
  - configs with no inputs/outputs (and no max_batch_size) are auto-completed and served;
  - a NaN kNN input or a wrong row_splits fails that request alone (400 / INVALID_ARG) while
    concurrent good requests succeed;
  - a model with a bad parameter fails to load naming it, the others keep serving;
  - batch-1 requests whose gRPC deadline passes while queued are not executed (the backend
    checks Triton's cancellation);
  - explicit unload / load; instance_group count 2 runs both instances correctly; 64 concurrent
    clients with 0 failures; SIGTERM shuts down cleanly.

Usage: test_triton.py --backend-dir DIR --server BIN --make-repository BIN --infer BIN
"""
import argparse
import concurrent.futures
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from server_fixture import KaasServer, TritonServer, check, expect_error, failures, scratch_directory, write_repository  # noqa: E402

EMTRK = "emtrkmichelid"
EMTRK_OUTPUTS = ["em_trk_none_netout/Softmax", "michel_netout/Sigmoid"]
DEADLINE_QUEUE_S = 0.5  # work queued ahead of the 50 ms-deadline requests: 10 deadlines


def in_process(infer_bin, model, patches, tmp, max_batch=1024):
    """kaas-infer on the same model file, planned for the same max batch as the server's model."""
    np.save(tmp / "in.npy", patches)
    out = tmp / "ref"
    subprocess.run([infer_bin, "--model", str(model), "--backend", "openmp", "--input",
                    f"main_input={tmp / 'in.npy'}", "--output-dir", str(out), "--batch", str(max_batch)],
                   check=True, stdout=subprocess.DEVNULL)
    return [np.load(out / (name.replace("/", "_") + ".npy")) for name in EMTRK_OUTPUTS]


def infer(client, module, model, arrays, outputs=None, **kwargs):
    """One request with numpy inputs {name: array}; returns {output: array}."""
    inputs = []
    for name, array in arrays.items():
        dtype = {np.float32: "FP32", np.int32: "INT32", np.int64: "INT64"}[array.dtype.type]
        i = module.InferInput(name, list(array.shape), dtype)
        i.set_data_from_numpy(array)
        inputs.append(i)
    requested = [module.InferRequestedOutput(n) for n in outputs] if outputs else None
    result = client.infer(model, inputs, outputs=requested, **kwargs)
    return {n: result.as_numpy(n) for n in outputs or []}


def same(a, b):
    return set(a) == set(b) and all(a[k].shape == b[k].shape and a[k].dtype == b[k].dtype and
                                    np.array_equal(a[k], b[k]) for k in a)




def zero_suppressed(patches, rng):
    """Rows as a zero-suppressing readout leaves them: bands of live wires, a few hits, empty
    rows; the others noise everywhere. With the measuring planner some take the sparse plan."""
    for i in range(len(patches)):
        if i % 4 == 1:
            patches[i, :16] = 0
            patches[i, 16 + 3 + i % 20:] = 0
        elif i % 4 == 2:
            patches[i, rng.uniform(size=(48, 48)) >= 0.03 * (1 + i % 8)] = 0
        elif i % 8 == 3:
            patches[i] = 0
    return patches


def http_post(url, path, body=b""):
    request = urllib.request.Request(f"http://{url}{path}", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def write_extra_models(repo):
    """Models beside the default ones: bare configs to auto-complete, a bad parameter, and two
    instances without dynamic batching."""
    onnx = repo / EMTRK / "1" / "model.onnx"
    for name, config, needs_file in (
            ("emtrk_auto", 'backend: "kaas"\n', True),
            ("knn_auto", 'backend: "kaas"\nparameters { key: "kaas_model" value { string_value: "knn" } }\n', False),
            ("knn_bad", 'backend: "kaas"\nparameters { key: "kaas_model" value { string_value: "knn" } }\n'
                        'parameters { key: "k" value { string_value: "zero" } }\n', False),
            ("emtrk_two", 'backend: "kaas"\nmax_batch_size: 256\n'
                          'instance_group [ { kind: KIND_CPU count: 2 } ]\n', True),
            ("knn_half", 'backend: "kaas"\nparameters { key: "kaas_model" value { string_value: "knn" } }\n'
                         'input [ { name: "points" data_type: TYPE_FP16 dims: [ -1, -1 ] } ]\n'
                         'output [ { name: "distances" data_type: TYPE_BF16 dims: [ -1, 16 ] } ]\n', False)):
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "config.pbtxt").write_text(config)
        if needs_file:
            shutil.copy(onnx, repo / name / "1" / "model.onnx")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend-dir", required=True, help="directory holding kaas/libtriton_kaas.so")
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--infer", required=True)
    args = parser.parse_args()
    tmp = scratch_directory("kaas-triton-test-")
    triton_repo, kaas_repo = tmp / "triton-repo", tmp / "kaas-repo"
    write_repository(args.make_repository, triton_repo, "triton")
    write_repository(args.make_repository, kaas_repo, "kaas")
    write_extra_models(triton_repo)
    # The measuring planner, as in production: the bits must not depend on it. As a site ships a
    # measured plan with its models, EmTrkMichelId's plan file is made once (kaas-infer writes it
    # beside the model) and copied to every copy of the model (emtrk_auto, emtrk_two, kaas-server's
    # repository); Triton's load measures the others, and kaas-server's repository gets those too.
    os.environ["KAAS_PLANNER"] = "measure"
    in_process(args.infer, triton_repo / EMTRK / "1" / "model.onnx",
               np.zeros((4, 48, 48, 1), np.float32), tmp, 4)
    plan = triton_repo / EMTRK / "1" / "kaas_plan.tsv"
    check(plan.is_file(), "kaas-infer wrote EmTrkMichelId's plan file beside the model")
    for copy in (triton_repo / "emtrk_auto", triton_repo / "emtrk_two", kaas_repo / EMTRK):
        shutil.copy(plan, copy / "1" / plan.name)
    triton = TritonServer(triton_repo, args.backend_dir,
                          ["--model-control-mode=explicit", "--load-model=*", "--exit-on-error=false",
                           "--log-verbose=1", "--backend-config=kaas,threads=2"], wait_ready=False)
    for measured in triton_repo.glob("*/1/kaas_plan.tsv"):
        if (kaas_repo / measured.parent.parent.name / "1").is_dir():
            shutil.copy(measured, kaas_repo / measured.parent.parent.name / "1" / measured.name)
    kaas = KaasServer(args.server, kaas_repo)
    try:
        run(triton, kaas, triton_repo, tmp, args)
    finally:
        kaas.stop()
        code = triton.stop()
        log = triton.output()
        check(code == 0 and "Signal (15) received" in log and "Signal (11)" not in log,
              f"SIGTERM: tritonserver exited with {code}")
        check(f"successfully unloaded '{EMTRK}'" in log, "SIGTERM: models unloaded")
    print(f"{len(failures)} failure(s)")
    if failures:
        print("---- tritonserver log (tail) ----\n" + "\n".join(triton.output().splitlines()[-60:]))
    return 1 if failures else 0


def run(triton, kaas, repo, tmp, args):
    tg = grpcclient.InferenceServerClient(triton.grpc_url)
    th = httpclient.InferenceServerClient(triton.http_url, concurrency=8)
    kg = grpcclient.InferenceServerClient(kaas.grpc_url)
    check(tg.is_server_live(), "tritonserver live")
    for name in (EMTRK, "knn", "michel_from_image", "emtrk_auto", "knn_auto", "emtrk_two", "knn_half"):
        check(tg.is_model_ready(name) and th.is_model_ready(name), f"{name} READY in Triton (kaas backend)")
    check(not tg.is_model_ready("knn_bad"), "knn_bad (k = 'zero') did not load")
    status, body = http_post(triton.http_url, "/v2/repository/index")
    index = {m["name"]: m for m in json.loads(body)}
    reason = index.get("knn_bad", {}).get("reason", "")
    check("parameter k" in reason and "zero" in reason, f"knn_bad load error names the parameter: '{reason[:120]}'")

    rng = np.random.default_rng(11)
    # EmTrkMichelId: Triton gRPC == Triton HTTP == kaas-server == in-process, bit for bit.
    for batch in (1, 5, 256):
        patches = zero_suppressed(rng.uniform(-5, 15, size=(batch, 48, 48, 1)).astype(np.float32), rng)
        ref = dict(zip(EMTRK_OUTPUTS, in_process(args.infer, repo / EMTRK / "1" / "model.onnx", patches, tmp)))
        arrays = {"main_input": patches}
        got_grpc = infer(tg, grpcclient, EMTRK, arrays, EMTRK_OUTPUTS)
        got_http = infer(th, httpclient, EMTRK, arrays, EMTRK_OUTPUTS)
        got_kaas = infer(kg, grpcclient, EMTRK, arrays, EMTRK_OUTPUTS)
        check(same(got_grpc, ref), f"{EMTRK} batch {batch}: Triton gRPC == in-process kaas bit for bit")
        check(same(got_http, ref), f"{EMTRK} batch {batch}: Triton HTTP == in-process kaas bit for bit")
        check(same(got_grpc, got_kaas), f"{EMTRK} batch {batch}: Triton == kaas-server bit for bit")
    # --backend-config=kaas,threads=2 holds on Triton's instance threads: the backend logs the
    # widest OpenMP team that really ran (the 256-row executions are split over the team).
    # (The line follows the responses: wait for it.)
    for _ in range(50):
        teams = re.findall(r"instance emtrkmichelid\S*: \d+ requests, \d+ executions, 256 rows, "
                           r"widest OpenMP team (\d+) \(requested (\d+)\)", triton.output())
        if teams:
            break
        time.sleep(0.1)
    check(bool(teams) and all(t == ("2", "2") for t in teams),
          f"{EMTRK}: batch 256 ran on 2 OpenMP threads in Triton's instance thread (log: {teams})")

    # kNN: ragged events (sizes 0, 1, 37, 300) in one request.
    sizes = [0, 1, 37, 300]
    points = rng.uniform(0, 1, size=(sum(sizes), 3)).astype(np.float32)
    splits = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    arrays = {"points": points, "row_splits": splits}
    got_t = infer(tg, grpcclient, "knn", arrays, ["indices", "distances"])
    got_h = infer(th, httpclient, "knn", arrays, ["indices", "distances"])
    got_k = infer(kg, grpcclient, "knn", arrays, ["indices", "distances"])
    check(same(got_t, got_k) and same(got_h, got_k), "knn ragged events: Triton (gRPC, HTTP) == kaas-server bit for bit")
    ev = points[38:338]
    d2 = ((ev[:, None, :] - ev[None, :, :]) ** 2).sum(-1)
    truth = np.argsort(d2, axis=1, kind="stable")[:, :16] + 38
    check(np.array_equal(np.sort(got_t["indices"][38:], 1), np.sort(truth, 1)) and got_t["indices"][0, 1] == -1,
          "knn: neighbours equal numpy's brute force; a 1-point event pads with -1")

    # FP16 points in, BF16 distances out (declared in the config, converted by the kaas backend at
    # the model's boundary): the FP32 knn's results on the same points, rounded to nearest even.
    half = points.astype(np.float16)
    ref = infer(kg, grpcclient, "knn", {"points": half.astype(np.float32), "row_splits": splits},
                ["indices", "distances"])
    u = ref["distances"].view(np.uint32).astype(np.uint64)
    bf16 = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    for module, client in ((grpcclient, tg), (httpclient, th)):
        ins = [module.InferInput("points", list(half.shape), "FP16"), module.InferInput("row_splits", [5], "INT64")]
        ins[0].set_data_from_numpy(half)
        ins[1].set_data_from_numpy(splits)
        result = client.infer("knn_half", ins)
        distances = result.as_numpy("distances")
        check(str(distances.dtype) == "bfloat16" and np.array_equal(distances.view(np.uint16), bf16) and
              np.array_equal(result.as_numpy("indices"), ref["indices"]),
              f"knn_half ({module.__name__}): FP16 points, BF16 distances == the FP32 knn's, rounded")

    # michel_from_image: one plane.
    image = rng.uniform(-5, 15, size=(120, 500)).astype(np.float32)
    wires = rng.integers(0, 120, size=700).astype(np.int32)
    ticks = rng.uniform(0, 2999, size=700).astype(np.float32)
    arrays = {"image": image, "hit_wire": wires, "hit_tick": ticks}
    got_t = infer(tg, grpcclient, "michel_from_image", arrays, ["scores", "fiducial"])
    got_h = infer(th, httpclient, "michel_from_image", arrays, ["scores", "fiducial"])
    got_k = infer(kg, grpcclient, "michel_from_image", arrays, ["scores", "fiducial"])
    check(got_t["scores"].shape == (700, 4) and same(got_t, got_k) and same(got_h, got_k),
          "michel_from_image plane (700 hits): Triton (gRPC, HTTP) == kaas-server bit for bit")

    # Triton's dynamic batcher: 256 concurrent batch-1 requests, fewer executions, same results.
    patches = zero_suppressed(rng.uniform(-5, 15, size=(256, 48, 48, 1)).astype(np.float32), rng)
    whole = infer(tg, grpcclient, EMTRK, {"main_input": patches}, EMTRK_OUTPUTS)

    def settled_statistics():
        """The model's statistics once two reads 0.1 s apart agree: an execution is counted when
        the backend reports it, which may be just after its responses reached the client."""
        last = None
        for _ in range(50):
            now = tg.get_inference_statistics(EMTRK).model_stats[0]
            if last is not None and (now.inference_count, now.execution_count) == \
                    (last.inference_count, last.execution_count):
                return now
            last = now
            time.sleep(0.1)
        return last

    before = settled_statistics()
    clients = [grpcclient.InferenceServerClient(triton.grpc_url) for _ in range(64)]
    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        singles = list(pool.map(lambda i: infer(clients[i % 64], grpcclient, EMTRK, {"main_input": patches[i:i + 1]},
                                                EMTRK_OUTPUTS), range(256)))
    after = settled_statistics()
    executions = after.execution_count - before.execution_count
    inferences = after.inference_count - before.inference_count
    check(inferences == 256 and executions < 256,
          f"Triton dynamic batching: 256 batch-1 requests ({inferences} counted) in {executions} executions "
          "(64 concurrent clients)")
    independent = all(np.array_equal(singles[i][n][0], whole[n][i]) for i in range(256) for n in EMTRK_OUTPUTS)
    check(independent, "results independent of batch composition (each batch-1 answer == its row of batch 256)")
    check(any(b.batch_size > 1 for b in after.batch_stats), "Triton batch statistics show batches > 1")

    # 64 concurrent clients on every default model: 0 failures. The michel_from_image requests carry
    # 64 hits of the plane above (its 700 are checked above; 128 of them would be most of this
    # script's time: the model's one instance runs them one after another).
    few = {"image": image, "hit_wire": wires[:64], "hit_tick": ticks[:64]}

    def mixed(i):
        c = clients[i % 64]
        if i % 3 == 0:
            return same(infer(c, grpcclient, EMTRK, {"main_input": patches[i % 250:i % 250 + 3]}, EMTRK_OUTPUTS),
                        {n: whole[n][i % 250:i % 250 + 3] for n in EMTRK_OUTPUTS})
        if i % 3 == 1:
            return same(infer(c, grpcclient, "knn", {"points": points, "row_splits": splits}, ["indices", "distances"]),
                        got_k_knn)
        return infer(c, grpcclient, "michel_from_image", few, ["scores"])["scores"].shape == (64, 4)
    got_k_knn = infer(kg, grpcclient, "knn", {"points": points, "row_splits": splits}, ["indices", "distances"])
    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        outcomes = list(pool.map(lambda i: _safe(mixed, i), range(384)))
    check(all(o is True for o in outcomes), f"64 concurrent clients, 384 mixed requests: {outcomes.count(True)} correct, "
                                           f"{sum(1 for o in outcomes if o is not True)} failed")

    # A bad request fails alone; concurrent good ones succeed.
    nan_points = points.copy()
    nan_points[40, 1] = np.nan
    bad_splits = splits.copy()
    bad_splits[-1] += 1
    expect_error("knn NaN input", lambda: infer(tg, grpcclient, "knn", {"points": nan_points, "row_splits": splits}),
                 "points", ["INVALID_ARG"])
    expect_error("knn wrong row_splits", lambda: infer(tg, grpcclient, "knn", {"points": points, "row_splits": bad_splits}),
                 "row_splits", ["INVALID_ARG"])
    status, body = http_post(triton.http_url, "/v2/models/knn/infer", json.dumps({"inputs": [
        {"name": "points", "shape": [2, 1], "datatype": "FP32", "data": [0, 1]},
        {"name": "row_splits", "shape": [2], "datatype": "INT64", "data": [0, 3]}]}).encode())
    check(status == 400 and b"row_splits" in body, f"HTTP wrong row_splits: {status} {body[:100]!r}")

    def good_or_bad(i):
        if i % 4 == 0:
            try:
                infer(clients[i % 64], grpcclient, "knn", {"points": nan_points, "row_splits": splits})
                return "bad accepted"
            except InferenceServerException as e:
                return "rejected" if "INVALID_ARG" in str(e.status()) else str(e.status())
        return "ok" if same(infer(clients[i % 64], grpcclient, "knn", {"points": points, "row_splits": splits},
                                  ["indices", "distances"]), got_k_knn) else "wrong"
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        mix = list(pool.map(lambda i: _safe(good_or_bad, i), range(64)))
    check(mix.count("rejected") == 16 and mix.count("ok") == 48,
          f"concurrent NaN (16) and good (48) kNN requests: {mix.count('rejected')} rejected, {mix.count('ok')} correct")

    # Auto-completed configs.
    cfg = th.get_model_config("emtrk_auto")
    check(cfg["max_batch_size"] == 4 and [i["name"] for i in cfg["input"]] == ["main_input"] and
          "dynamic_batching" in cfg, f"emtrk_auto completed: max_batch_size {cfg['max_batch_size']}, inputs, dynamic batching")
    p4 = patches[:4]
    ref4 = dict(zip(EMTRK_OUTPUTS, in_process(args.infer, repo / "emtrk_auto" / "1" / "model.onnx", p4, tmp, 4)))
    check(same(infer(tg, grpcclient, "emtrk_auto", {"main_input": p4}, EMTRK_OUTPUTS), ref4),
          "emtrk_auto serves batch 4: == in-process kaas planned for max batch 4, bit for bit")
    expect_error("emtrk_auto batch 5", lambda: infer(tg, grpcclient, "emtrk_auto", {"main_input": patches[:5]}),
                 "batch", ["INVALID_ARG"])
    kcfg = th.get_model_config("knn_auto")
    check(kcfg["max_batch_size"] == 0 and sorted(o["name"] for o in kcfg["output"]) == ["distances", "indices"],
          "knn_auto completed: max_batch_size 0, outputs indices + distances")
    check(same(infer(tg, grpcclient, "knn_auto", {"points": points, "row_splits": splits}, ["indices", "distances"]),
               got_k_knn), "knn_auto serves the same neighbours")

    # Two instances, no dynamic batching: both execute, results correct.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        two = list(pool.map(lambda i: same(infer(clients[i], grpcclient, "emtrk_two", {"main_input": patches[i * 16:(i + 1) * 16]},
                                                 EMTRK_OUTPUTS), {n: whole[n][i * 16:(i + 1) * 16] for n in EMTRK_OUTPUTS}),
                            range(16)))
    log = triton.output()
    check(all(two), "instance_group count 2: 16 concurrent requests correct")
    check("instance emtrk_two_0_0:" in log and "instance emtrk_two_0_1:" in log,
          "instance_group count 2: both instances executed")

    # Deadlines: batch-1 requests whose 50 ms gRPC deadline passes while they wait behind
    # 1024-patch executions are cancelled by Triton and not run by the backend (before the
    # backend checked TRITONBACKEND_RequestIsCancelled, all of them ran). The queue ahead of them
    # holds at least DEADLINE_QUEUE_S (10 deadlines) of work on any machine: as many 1024-patch
    # requests as that takes at this machine's speed, and the small ones are sent once enough of
    # them wait in Triton's queue (its pending-request gauge). Any small one answered in time
    # anyway is counted, not assumed away: the check is that none that got DEADLINE_EXCEEDED ran.
    def emtrk_stats():
        m = tg.get_inference_statistics(EMTRK).model_stats[0]
        return (m.inference_count, m.execution_count, m.inference_stats.fail.count,
                {b.batch_size: (b.compute_infer.count, b.compute_infer.ns) for b in m.batch_stats})

    def emtrk_pending():
        with urllib.request.urlopen(f"http://{triton.host}:{triton.metrics_port}/metrics", timeout=10) as r:
            text = r.read().decode()
        m = re.search(r'^nv_inference_pending_request_count\{model="%s",version="1"\} (\d+)' % EMTRK, text, re.M)
        return int(m.group(1)) if m else 0

    def settled_stats(done=lambda s: True, seconds=30):
        """emtrk_stats() once `done` holds for it and a read 0.1 s later agrees (an execution is
        counted when the backend reports it, just after its responses)."""
        deadline = time.time() + seconds
        last = emtrk_stats()
        while time.time() < deadline:
            time.sleep(0.1 if done(last) else 0.02)
            now = emtrk_stats()
            if now == last and done(now):
                return now
            last = now
        return last

    def one(x, **kwargs):
        try:
            infer(grpcclient.InferenceServerClient(triton.grpc_url), grpcclient, EMTRK, {"main_input": x}, **kwargs)
            return "OK"
        except InferenceServerException as e:
            return str(e.status())

    big = rng.uniform(-5, 15, size=(1024, 48, 48, 1)).astype(np.float32)
    # This machine's time for one 1024-patch execution, from Triton's statistics.
    warm = settled_stats()
    one(big)
    timed = settled_stats(lambda s: s[3].get(1024, (0, 0))[0] > warm[3].get(1024, (0, 0))[0])
    runs, ns = (a - b for a, b in zip(timed[3].get(1024, (0, 0)), warm[3].get(1024, (0, 0))))
    execution_s = ns / 1e9 / max(runs, 1)
    ahead = math.ceil(DEADLINE_QUEUE_S / max(execution_s, 1e-3))  # queued 1024-patch requests wanted
    # Spare ones: some execute while the others are still being sent (9.4 MB each, on the same
    # cores), and `ahead` must still be waiting when the small ones go.
    longs_n = min(3 * ahead + 2, 64)
    before = settled_stats()
    with concurrent.futures.ThreadPoolExecutor(longs_n + 8) as pool:
        longs = [pool.submit(one, big) for _ in range(longs_n)]
        queued, most = 0, 0
        deadline = time.time() + 60
        while queued < ahead and time.time() < deadline and not all(f.done() for f in longs):
            queued = emtrk_pending()
            most = max(most, queued)
            if queued < ahead:
                time.sleep(0.02)
        smalls = [pool.submit(one, big[:1], client_timeout=0.05) for _ in range(8)]
        long_answers, small_answers = [f.result() for f in longs], [f.result() for f in smalls]
    answered = small_answers.count("OK")
    expired = small_answers.count("StatusCode.DEADLINE_EXCEEDED")
    # Every request counted by the backend: the long ones executed, each small one executed or
    # failed (cancelled). A small one whose deadline passed before Triton received it (the
    # client cancels it while the 9.4 MB requests hold the cores) is in no statistic: the wait
    # for all 8 is bounded, and such requests are reported, not counted as failures.
    counted = settled_stats(lambda s: s[0] - before[0] >= 1024 * longs_n and s[1] - before[1] >= longs_n and
                            (s[0] - before[0] - 1024 * longs_n) + (s[2] - before[2]) >= 8, seconds=5)
    inferences, executions, fails = (a - b for a, b in zip(counted[:3], before[:3]))
    grew = {size: count - before[3].get(size, (0, 0))[0] for size, (count, _) in counted[3].items()}
    small_runs = sum(c for size, c in grew.items() if size != 1024)
    small_rows = sum(size * c for size, c in grew.items() if size != 1024)
    check(queued >= ahead, f"Triton: {queued} of {longs_n} 1024-patch requests waited in the queue when the "
          f"batch-1 requests were sent (wanted {ahead}: {ahead * execution_s:.2f} s of work at "
          f"{execution_s * 1e3:.0f} ms per execution; most seen {most})")
    check(expired >= 5, f"Triton: most of the 8 batch-1 requests queued behind {queued} x 1024 patches passed "
          f"their 50 ms deadline: {expired}")
    check(long_answers == ["OK"] * longs_n and answered + expired == 8 and
          inferences == 1024 * longs_n + answered and executions == longs_n + small_runs and
          grew.get(1024) == longs_n and small_rows == answered and 0 < fails <= expired,
          f"Triton: {expired} of 8 batch-1 requests past their 50 ms deadline ({sorted(set(small_answers))}) "
          f"not executed: {inferences} patches = {longs_n} x 1024 + {answered} answered in time, "
          f"{executions} executions = {longs_n} + {small_runs} for those, {fails} failures "
          f"(cancelled by Triton; {expired - fails} expired before Triton received them)")

    # Explicit unload / load.
    status, _ = http_post(triton.http_url, "/v2/repository/models/knn/unload")
    check(status == 200 and not th.is_model_ready("knn"), "explicit unload: knn not ready")
    expect_error("infer on unloaded knn", lambda: infer(tg, grpcclient, "knn", {"points": points, "row_splits": splits}),
                 "knn", ["UNAVAILABLE", "NOT_FOUND"])
    check(tg.is_model_ready(EMTRK), "other models still serve after the unload")
    status, _ = http_post(triton.http_url, "/v2/repository/models/knn/load")
    check(status == 200 and th.is_model_ready("knn") and
          same(infer(tg, grpcclient, "knn", arrays_knn(points, splits), ["indices", "distances"]), got_k_knn),
          "explicit load: knn serves again, same results")
    status, body = http_post(triton.http_url, "/v2/repository/models/knn_bad/load")
    check(status == 400 and b"parameter k" in body, f"explicit load of knn_bad: {status} {body[:120]!r}")
    check(tg.is_model_ready(EMTRK), "other models still serve after the failed load")


def arrays_knn(points, splits):
    return {"points": points, "row_splits": splits}


def _safe(fn, i):
    try:
        return fn(i)
    except Exception as e:  # noqa: BLE001 - the outcome is counted, not raised
        return f"{type(e).__name__}: {e}"


if __name__ == "__main__":
    sys.exit(main())
