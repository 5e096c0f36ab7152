#!/usr/bin/env python3
"""The shared-memory extensions through tritonclient (PyPI), unchanged, against kaas-server and,
for comparison, the real tritonserver with the kaas backend:
  - tritonclient.utils.shared_memory over HTTP and gRPC: register, status, infer with the input
    and one output in shared memory (another output in the reply), unregister; results equal the
    same server's answer without shared memory, bit for bit, on both servers;
  - a SonicTriton-like sequence: regions registered once and reused by many inferences, grown
    (unregister, bigger region, register again) when a batch no longer fits, unregistered at the
    end;
  - client shared memory is off unless kaas-server is started with --allow-client-shm=true (as
    Triton since 2.69): the extensions are not advertised, registering and status are refused
    (UNAVAILABLE / 503, naming the flag), an inference naming a region is INVALID_ARGUMENT / 400,
    and plain inference still works;
  - hostile requests to kaas-server, each a clear error with the status Triton gives, the server
    still serving afterwards: duplicate name, unknown or malformed key, region beyond the object,
    unknown region, offset + size beyond the region, a byte size that disagrees with the tensor,
    only one of region / byte size, an output region too small, data and a region together, an
    object truncated after it was registered, CUDA shared memory without a device.

Usage: test_shared_memory.py --server BIN --make-repository BIN [--backend-dir DIR]
"""
import argparse
import os
import pathlib
import sys
import uuid

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from server_fixture import KaasServer, TritonServer, check, expect_error, failures, scratch_directory, write_repository  # noqa: E402

EMTRK = "emtrkmichelid"
SOFTMAX, SIGMOID = "em_trk_none_netout/Softmax", "michel_netout/Sigmoid"
PATCH_BYTES = 48 * 48 * 4


class Regions:
    """System shared memory regions this test created, destroyed at the end."""

    def __init__(self):
        self.handles = {}
        self.tag = uuid.uuid4().hex[:8]

    def create(self, name, byte_size):
        key = f"/kaas_test_{self.tag}_{name}"
        self.handles[name] = (shm.create_shared_memory_region(name, key, byte_size), key)
        return self.handles[name]

    def destroy(self, name):
        handle, _ = self.handles.pop(name)
        shm.destroy_shared_memory_region(handle)

    def destroy_all(self):
        for name in list(self.handles):
            self.destroy(name)


def plain(client, module, patches):
    """The same server's answer with the bytes in the request and reply."""
    i = module.InferInput("main_input", list(patches.shape), "FP32")
    i.set_data_from_numpy(patches)
    r = client.infer(EMTRK, [i], outputs=[module.InferRequestedOutput(SOFTMAX), module.InferRequestedOutput(SIGMOID)])
    return r.as_numpy(SOFTMAX), r.as_numpy(SIGMOID)


def shm_infer(client, module, patches, in_region, out_region, out_bytes, in_offset=0):
    """Input from `in_region` at `in_offset`, the softmax into `out_region`, the sigmoid in the reply."""
    i = module.InferInput("main_input", list(patches.shape), "FP32")
    i.set_shared_memory(in_region, patches.nbytes, offset=in_offset)
    o = module.InferRequestedOutput(SOFTMAX)
    o.set_shared_memory(out_region, out_bytes)
    return client.infer(EMTRK, [i], outputs=[o, module.InferRequestedOutput(SIGMOID)])


def round_trip(label, server, regions, rng):
    """Register, status, infer (input + one output in shared memory), unregister, per protocol."""
    for module, client in ((grpcclient, grpcclient.InferenceServerClient(server.grpc_url)),
                           (httpclient, httpclient.InferenceServerClient(server.http_url))):
        proto = "gRPC" if module is grpcclient else "HTTP"
        extensions = client.get_server_metadata()
        extensions = extensions.extensions if module is grpcclient else extensions["extensions"]
        check("system_shared_memory" in extensions and "cuda_shared_memory" in extensions,
              f"{label} {proto}: server extensions list system_shared_memory and cuda_shared_memory")
        client.unregister_system_shared_memory()
        batch = 5
        patches = rng.uniform(-5, 15, size=(batch, 48, 48, 1)).astype(np.float32)
        offset = 4096  # the tensor does not start the region
        in_handle, in_key = regions.create("in", offset + patches.nbytes)
        out_handle, out_key = regions.create("out", batch * 3 * 4)
        shm.set_shared_memory_region(in_handle, [patches], offset=offset)
        client.register_system_shared_memory("in", in_key, offset + patches.nbytes)
        client.register_system_shared_memory("out", out_key, batch * 3 * 4)
        status = client.get_system_shared_memory_status()
        if module is grpcclient:
            listed = {name: (r.key, r.byte_size) for name, r in status.regions.items()}
        else:
            listed = {r["name"]: (r["key"], r["byte_size"]) for r in status}
        check(listed == {"in": (in_key, offset + patches.nbytes), "out": (out_key, batch * 12)},
              f"{label} {proto}: status lists both regions with key and size")
        result = shm_infer(client, module, patches, "in", "out", batch * 3 * 4, in_offset=offset)
        softmax = shm.get_contents_as_numpy(out_handle, np.float32, [batch, 3])
        ref_softmax, ref_sigmoid = plain(client, module, patches)
        check(np.array_equal(softmax, ref_softmax) and np.array_equal(result.as_numpy(SIGMOID), ref_sigmoid),
              f"{label} {proto}: input and output through shared memory == without, bit for bit")
        client.unregister_system_shared_memory("in")
        client.unregister_system_shared_memory()
        status = client.get_system_shared_memory_status()
        check(len(status.regions if module is grpcclient else status) == 0,
              f"{label} {proto}: unregistered, status empty")
        regions.destroy_all()


def sonic_sequence(server, regions, rng):
    """As CMSSW's SonicTriton in local mode: regions registered once per size and reused."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    capacity, generation, events, correct = 0, 0, 0, 0
    for batch in (1, 1, 2, 3, 3, 8, 8, 16, 16, 40, 40, 40, 100, 100, 256, 256, 256, 256, 2, 1):
        if batch > capacity:  # grow: the old regions go, bigger ones come under the same names
            if capacity:
                client.unregister_system_shared_memory("sonic_in")
                client.unregister_system_shared_memory("sonic_out")
                regions.destroy("sonic_in")
                regions.destroy("sonic_out")
            capacity, generation = batch * 2, generation + 1
            _, in_key = regions.create("sonic_in", capacity * PATCH_BYTES)
            _, out_key = regions.create("sonic_out", capacity * 12)
            client.register_system_shared_memory("sonic_in", in_key, capacity * PATCH_BYTES)
            client.register_system_shared_memory("sonic_out", out_key, capacity * 12)
        patches = rng.uniform(-5, 15, size=(batch, 48, 48, 1)).astype(np.float32)
        shm.set_shared_memory_region(regions.handles["sonic_in"][0], [patches])
        shm_infer(client, grpcclient, patches, "sonic_in", "sonic_out", capacity * 12)
        got = shm.get_contents_as_numpy(regions.handles["sonic_out"][0], np.float32, [batch, 3])
        correct += np.array_equal(got, plain(client, grpcclient, patches)[0])
        events += 1
    client.unregister_system_shared_memory()
    regions.destroy_all()
    check(correct == events and generation == 6,
          f"SonicTriton-like: {events} inferences over {generation} region sizes, {correct} equal the plain answer")


def hostile(server, regions, rng):
    g = grpcclient.InferenceServerClient(server.grpc_url)
    h = httpclient.InferenceServerClient(server.http_url)
    g.unregister_system_shared_memory()
    patches = rng.uniform(-5, 15, size=(2, 48, 48, 1)).astype(np.float32)
    in_handle, in_key = regions.create("h_in", patches.nbytes)
    _, out_key = regions.create("h_out", 64)
    shm.set_shared_memory_region(in_handle, [patches])
    g.register_system_shared_memory("h_in", in_key, patches.nbytes)
    g.register_system_shared_memory("h_out", out_key, 64)
    grpc_invalid, http_invalid = ["INVALID_ARGUMENT"], ["400"]

    expect_error("gRPC register a name twice", lambda: g.register_system_shared_memory("h_in", in_key, 16),
                 "'h_in' is already registered", ["ALREADY_EXISTS"])
    expect_error("HTTP register a name twice", lambda: h.register_system_shared_memory("h_in", in_key, 16),
                 "'h_in' is already registered", http_invalid)
    expect_error("register an unknown key", lambda: g.register_system_shared_memory("x", "/kaas_no_such_key", 16),
                 "cannot open key '/kaas_no_such_key'", ["NOT_FOUND"])
    expect_error("register a key that is not a POSIX name", lambda: g.register_system_shared_memory("x", "no/slash", 16),
                 "is not a POSIX shared memory name", grpc_invalid)
    expect_error("register beyond the object",
                 lambda: g.register_system_shared_memory("x", in_key, 64, offset=patches.nbytes),
                 f"exceeds the {patches.nbytes} bytes of key", grpc_invalid)
    expect_error("register with byte_size 0", lambda: h.register_system_shared_memory("x", in_key, 0),
                 "byte_size must be > 0", http_invalid)
    expect_error("status of an unknown region", lambda: g.get_system_shared_memory_status("x"),
                 "no system shared memory region 'x'", ["NOT_FOUND"])

    def infer_with(client, module, region="h_in", byte_size=patches.nbytes, offset=0, shape=patches.shape,
                   out_region=None, out_bytes=0):
        i = module.InferInput("main_input", list(shape), "FP32")
        i.set_shared_memory(region, byte_size, offset=offset)
        outputs = None
        if out_region:
            o = module.InferRequestedOutput(SOFTMAX)
            o.set_shared_memory(out_region, out_bytes)
            outputs = [o]
        return client.infer(EMTRK, [i], outputs=outputs)

    for module, client, invalid, not_found in ((grpcclient, g, grpc_invalid, ["NOT_FOUND"]),
                                               (httpclient, h, http_invalid, ["404"])):
        proto = "gRPC" if module is grpcclient else "HTTP"
        expect_error(f"{proto} infer from an unknown region", lambda: infer_with(client, module, region="nope"),
                     "shared memory region 'nope' is not registered", not_found)
        expect_error(f"{proto} offset + size beyond the region", lambda: infer_with(client, module, offset=8),
                     f"exceeds the {patches.nbytes} bytes of region 'h_in'", invalid)
        expect_error(f"{proto} byte size that disagrees with the tensor",
                     lambda: infer_with(client, module, byte_size=patches.nbytes - 4, shape=[1, 48, 48, 1]),
                     "shared_memory_byte_size 18428 disagrees with shape [1,48,48,1] FP32", invalid)
        expect_error(f"{proto} output region too small",
                     lambda: infer_with(client, module, out_region="h_out", out_bytes=16),
                     "do not fit the shared_memory_byte_size 16 given for region 'h_out'", invalid)
    # What tritonclient never sends, through the raw stub: one parameter without the other, a
    # region and contents together, a negative size.
    def without_size(t):
        pass

    def with_contents(t):
        t.parameters["shared_memory_byte_size"].int64_param = patches.nbytes
        t.contents.fp32_contents.extend([0.0])

    def negative_size(t):
        t.parameters["shared_memory_byte_size"].int64_param = -1

    for what, edit, fragment in (("region without shared_memory_byte_size", without_size, "must be given together"),
                                 ("region and contents together", with_contents,
                                  "contents set although it names a shared memory region"),
                                 ("negative byte size", negative_size, "must be a non-negative")):
        request = grpcclient.service_pb2.ModelInferRequest(model_name=EMTRK)
        tensor = request.inputs.add(name="main_input", datatype="FP32", shape=[2, 48, 48, 1])
        tensor.parameters["shared_memory_region"].string_param = "h_in"
        edit(tensor)
        try:
            g._client_stub.ModelInfer(request)
            check(False, f"gRPC {what}: rejected")
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and fragment in e.details(),
                  f"gRPC {what}: {e.code()} '{e.details()[:120]}'")
    expect_error("CUDA shared memory register", lambda: g.register_cuda_shared_memory("c", b"\0" * 64, 0, 64),
                 "CUDA shared memory region 'c'", ["UNIMPLEMENTED", "UNAVAILABLE"])

    # A client that shrinks its object after registering: an error, not a crash.
    os.truncate("/dev/shm/" + in_key.lstrip("/"), 16)
    expect_error("infer from an object truncated after registration", lambda: infer_with(g, grpcclient),
                 "was truncated below the registered size", grpc_invalid)
    g.unregister_system_shared_memory()
    regions.destroy_all()
    ref = plain(g, grpcclient, patches)
    check(ref[0].shape == (2, 3) and g.is_server_live(), "kaas-server still serves after every hostile request")


def off_by_default(server, regions, rng):
    """kaas-server with default flags: no client shared memory."""
    g = grpcclient.InferenceServerClient(server.grpc_url)
    h = httpclient.InferenceServerClient(server.http_url)
    for proto, client in (("gRPC", g), ("HTTP", h)):
        metadata = client.get_server_metadata()
        extensions = metadata.extensions if proto == "gRPC" else metadata["extensions"]
        check("system_shared_memory" not in extensions and "cuda_shared_memory" not in extensions,
              f"off by default: {proto} server metadata advertises no shared memory {list(extensions)}")
    patches = rng.uniform(-5, 15, size=(2, 48, 48, 1)).astype(np.float32)
    in_handle, in_key = regions.create("off_in", patches.nbytes)
    shm.set_shared_memory_region(in_handle, [patches])
    flag = "--allow-client-shm=true"
    expect_error("off by default: gRPC register", lambda: g.register_system_shared_memory("off_in", in_key, patches.nbytes),
                 flag, ["UNAVAILABLE"])
    expect_error("off by default: HTTP register", lambda: h.register_system_shared_memory("off_in", in_key, patches.nbytes),
                 flag, ["503"])
    expect_error("off by default: gRPC status", lambda: g.get_system_shared_memory_status(), flag, ["UNAVAILABLE"])
    expect_error("off by default: gRPC CUDA register", lambda: g.register_cuda_shared_memory("c", b"\0" * 64, 0, 64),
                 flag, ["UNAVAILABLE"])
    for proto, client, module, codes in (("gRPC", g, grpcclient, ["INVALID_ARGUMENT"]),
                                         ("HTTP", h, httpclient, ["400"])):
        i = module.InferInput("main_input", list(patches.shape), "FP32")
        i.set_shared_memory("off_in", patches.nbytes)
        expect_error(f"off by default: {proto} infer naming a region", lambda: client.infer(EMTRK, [i]), flag, codes)
    ref = plain(g, grpcclient, patches)
    check(ref[0].shape == (2, 3), "off by default: plain inference is served")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--backend-dir", help="directory holding kaas/libtriton_kaas.so: compare with tritonserver")
    args = parser.parse_args()
    tmp = scratch_directory("kaas-shm-test-")
    write_repository(args.make_repository, tmp / "kaas-repo")
    rng = np.random.default_rng(32)
    regions = Regions()
    off = KaasServer(args.server, tmp / "kaas-repo")
    try:
        off_by_default(off, regions, rng)
    finally:
        regions.destroy_all()
        off.stop()
    kaas = KaasServer(args.server, tmp / "kaas-repo", ["--allow-client-shm=true"])
    try:
        round_trip("kaas-server", kaas, regions, rng)
        sonic_sequence(kaas, regions, rng)
        hostile(kaas, regions, rng)
    finally:
        regions.destroy_all()
        code = kaas.stop()
        check(code == 0, f"SIGTERM: kaas-server exited with {code}")
    if args.backend_dir:
        write_repository(args.make_repository, tmp / "triton-repo", "triton")
        triton = TritonServer(tmp / "triton-repo", args.backend_dir)
        try:
            round_trip("tritonserver + kaas backend", triton, regions, rng)
        finally:
            regions.destroy_all()
            triton.stop()
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
