// w4a16._core.Moe: one mixture-of-experts layer of a Hugging Face checkpoint (moe::load_moe_layer) or built from
// experts in memory (moe::moe_layer_from_experts / moe_layer_from_stacked, router optional), driven as
// tools/cmd_moe.cpp drives it: router logits on the host (router_logits_cpu) and
// route_cpu, or topk_ids / topk_weights given by the caller; then moe_cpu on CPU arrays or
// moe::CudaMoe on CUDA arrays (CUDA builds only), and moe_reference as the oracle.
//   x act [T, H], topk_ids int32 [T, k], topk_weights fp32 [T, k], out act [T, H]
// Bindings only: argument checks and error text here; shapes, ids in range, devices and
// contiguity are checked again by the library in its own terms.
//
// CUDA: CudaMoe is prepared once per (activation dtype, device) and kept by the object with a
// device workspace that the binding grows (cudaMalloc, outside CudaMoe::run, which never
// allocates), and the router uploaded beside it. Routing by the router runs on the device
// (router_logits_cuda, route_cuda): no copy of x, no wait for the stream.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>
#include <tuple>
#include <thread>
#include <vector>

#ifdef W4A16_PY_HAVE_CUDA
#include <cuda_runtime.h>

#include "w4a16/moe/moe_cuda.hpp"
#endif

#include "bind.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::py {
namespace {

#ifdef W4A16_PY_HAVE_CUDA
void cuda_try(cudaError_t e, std::string_view what) {
  if (e != cudaSuccess) fail(ErrorCode::cuda_error, what, "cudaSuccess", cudaGetErrorString(e));
}

// Makes `device` current for the scope (x's GPU), restores the caller's.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    cuda_try(cudaGetDevice(&previous_), "cudaGetDevice");
    if (device != previous_) cuda_try(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

// Device memory that only grows. Growing waits for the device first: a launch of an earlier call,
// on any stream, may still read the old buffer (so warm up with the largest T before graph capture).
struct DeviceMemory {
  std::shared_ptr<void> ptr;
  std::size_t bytes = 0;

  void* reserve(std::size_t need, std::string_view what) {
    if (need <= bytes) return ptr.get();
    if (ptr) cuda_try(cudaDeviceSynchronize(), what);
    ptr.reset();
    bytes = 0;
    void* p = nullptr;
    cuda_try(cudaMalloc(&p, need), what);
    ptr = std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
    bytes = need;
    return p;
  }
};

// CudaMoe of one (activation dtype, device) with its workspace and, for routing by the router,
// the uploaded topk_ids / topk_weights.
struct CudaPrepared {
  DType act = DType::f16;
  int device = 0;
  moe::CudaMoe m;
  DeviceMemory workspace, routing;
  DeviceMemory router;  // the layer's router [E, H] on this device (uploaded with the experts), if it has one
};
#endif

struct PyMoe {
  PyMoe() = default;
  PyMoe(const PyMoe&) = delete;  // owns device memory (CUDA); nanobind must not copy it
  PyMoe& operator=(const PyMoe&) = delete;

  moe::MoeLayer layer;
#ifdef W4A16_PY_HAVE_CUDA
  std::vector<std::unique_ptr<CudaPrepared>> cuda;  // few entries (dtype x device): a linear search
#endif
  // drop_host: the experts' host tensors are gone (the spec, the router and the CUDA layers prepared before stay);
  // whatever needs them (CPU runs, the reference, tensors, a CUDA layer not yet prepared) refuses (require_experts).
  bool host_released = false;
  std::size_t released_nbytes = 0;
  const moe::MoeSpec& spec() const { return layer.weights.spec(); }
};

// The prepared CUDA layers as "float16 on cuda:0, ..." ("none"), for messages.
std::string prepared_text(const PyMoe& self) {
  std::string t;
#ifdef W4A16_PY_HAVE_CUDA
  for (const auto& p : self.cuda)
    t += (t.empty() ? "" : ", ") + std::string(dtype_name(p->act)) + " on cuda:" + std::to_string(p->device);
#else
  (void)self;
#endif
  return t.empty() ? "none" : t;
}

void require_experts(const PyMoe& self, std::string_view what) {
  if (self.host_released)
    fail(ErrorCode::unsupported, what, "a Moe holding its expert tensors",
         "one whose host copy was released by drop_host() (CUDA layers prepared before it: " + prepared_text(self) +
             ")");
}

// Frees the experts' host tensors (CudaMoe holds its own device copy: moe::CudaMoe::create packs and uploads).
void drop_host(PyMoe& self) {
  if (self.host_released) return;
  self.released_nbytes = self.layer.weights.nbytes();
  moe::MoeWeights& w = self.layer.weights;
  for (HostTensor* t : {&w.w13_qweight, &w.w13_scales, &w.w13_zeros, &w.w2_qweight, &w.w2_scales, &w.w2_zeros})
    *t = HostTensor();
  self.host_released = true;
}

// Moves `other`'s prepared CUDA layers of a (dtype, device) that `self` lacks into `self` (the torch op's rebuild of a
// released layer keeps what was prepared; both were made from the same tensors).
void adopt_prepared(PyMoe& self, PyMoe& other) {
#ifdef W4A16_PY_HAVE_CUDA
  for (auto& p : other.cuda) {
    const bool have = std::any_of(self.cuda.begin(), self.cuda.end(),
                                  [&](const auto& q) { return q->act == p->act && q->device == p->device; });
    if (!have) self.cuda.push_back(std::move(p));
  }
  other.cuda.erase(std::remove(other.cuda.begin(), other.cuda.end(), nullptr), other.cuda.end());
#else
  (void)self;
  (void)other;
#endif
}

// x [T, H] of an activation dtype, named as the Python caller passed it.
TensorView x_view(const PyMoe& self, const InArray& x_arr, std::string_view bits16) {
  TensorView x = to_view(x_arr, "x", bits16);
  const std::string want = "float16 or bfloat16 [T, H] (or [H]) with H = " + std::to_string(self.spec().hidden);
  if (!is_activation_dtype(x.dtype)) fail(ErrorCode::dtype_mismatch, "x", want, describe(x));
  if (x.rank != 2 || x.size(1) != self.spec().hidden) fail(ErrorCode::shape_mismatch, "x", want, describe(x));
  check_cuda_built(x.device, "x");
  return x;
}

void check_top_k(const PyMoe& self, int top_k) {
  if (top_k < 1 || top_k > self.spec().experts)  // route_cpu's own check, made before any copy
    fail(ErrorCode::invalid_argument, "top_k", "1 <= top_k <= experts = " + std::to_string(self.spec().experts),
         std::to_string(top_k));
}

// ids and weights come together or not at all.
void check_pair(const std::optional<InArray>& ids, const std::optional<InArray>& weights) {
  if (ids.has_value() == weights.has_value()) return;
  const char* missing = ids ? "topk_weights" : "topk_ids";
  const char* given = ids ? "topk_ids" : "topk_weights";
  fail(ErrorCode::invalid_argument, missing,
       std::string("an array, since ") + given + " was given (pass both topk_ids and topk_weights, or neither)", "None");
}

struct HostRouting {
  HostTensor ids, weights;  // int32 [T, k], fp32 [T, k]
};

// Routing by the layer's router: fp32 logits (f64 accumulation), softmax top-k. x: host [T, H].
// A layer built without a router routes nothing itself: its calls must bring topk_ids / topk_weights.
void check_router(const PyMoe& self, std::string_view arg) {
  if (self.layer.has_router()) return;
  const std::string why = self.layer.routing_from == "default" ? "it was built from experts without one"
                                                               : self.layer.routing_from;
  if (arg == "router")
    fail(ErrorCode::invalid_argument, arg,
         "a router [E, H] (this layer has none: " + why + "; its calls take topk_ids and topk_weights)", "None");
  fail(ErrorCode::invalid_argument, arg, "topk_ids and topk_weights (this layer has no router: " + why + ")", "None");
}

HostRouting route_host(const PyMoe& self, const TensorView& x, int top_k, bool renormalize) {
  check_router(self, "topk_ids");
  check_top_k(self, top_k);
  const std::int64_t T = x.size(0);
  const int E = self.spec().experts;
  std::vector<float> logits(static_cast<std::size_t>(T * E));
  moe::router_logits_cpu(x, self.layer.router.view(), logits.data());
  HostRouting r{HostTensor(DType::i32, {T, top_k}), HostTensor(DType::f32, {T, top_k})};
  moe::route_cpu(logits.data(), T, E, {top_k, renormalize}, r.ids.ptr<std::int32_t>(), r.weights.ptr<float>());
  return r;
}

nb::tuple route(const PyMoe& self, const InArray& x_arr, int top_k, bool renormalize, std::string_view bits16) {
  check_router(self, "router");
  TensorView x = x_view(self, x_arr, bits16);
  require_host(x, "x");
  HostRouting r;
  {
    nb::gil_scoped_release release;
    r = route_host(self, x, top_k, renormalize);
  }
  return nb::make_tuple(to_numpy(std::move(r.ids)), to_numpy(std::move(r.weights)));
}

void run_cpu(const PyMoe& self, const TensorView& x, const TensorView& out, const std::optional<InArray>& ids_arr,
             const std::optional<InArray>& weights_arr, int top_k, bool renormalize, int threads, int block) {
  require_experts(self, "x on the CPU");
  if (block != 0)
    fail(ErrorCode::invalid_argument, "block", "0 for CPU arrays (slots per block are the CUDA layer's)",
         std::to_string(block));
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  moe::MoeArgs a{x, {}, {}, out};
  HostRouting r;
  if (ids_arr) {
    a.topk_ids = to_view(*ids_arr, "topk_ids");
    a.topk_weights = to_view(*weights_arr, "topk_weights");
  }
  nb::gil_scoped_release release;  // routing and the layer never touch Python
  if (!ids_arr) {
    r = route_host(self, x, top_k, renormalize);
    a.topk_ids = r.ids.view();
    a.topk_weights = r.weights.view();
  }
  // k for the workspace size only; a k that moe_cpu refuses fails its checks before the workspace's.
  const int k = a.topk_ids.rank == 2 ? static_cast<int>(std::clamp<std::int64_t>(a.topk_ids.size(1), 1, self.spec().experts)) : 1;
  std::vector<unsigned char> ws(moe::moe_cpu_workspace_bytes(self.spec(), x.size(0), k, threads));
  moe::moe_cpu(self.layer.weights, a, ws.data(), ws.size(), threads);
}

#ifdef W4A16_PY_HAVE_CUDA
std::string where(const TensorView& t) {
  return t.device == Device::cuda ? "cuda:" + std::to_string(t.device_index) : "cpu";
}

CudaPrepared& prepared(PyMoe& self, DType act, int device, void* stream) {
  for (auto& p : self.cuda)
    if (p->act == act && p->device == device) return *p;
  require_experts(self, "x of " + std::string(dtype_name(act)) + " on cuda:" + std::to_string(device) +
                            " (a CUDA layer to prepare)");
  auto p = std::make_unique<CudaPrepared>();
  p->act = act;
  p->device = device;
  {
    nb::gil_scoped_release release;  // packs every expert on the host, uploads and waits
    DeviceScope scope(device);
    p->m = moe::CudaMoe::create(self.layer.weights, act, stream);
    if (self.layer.has_router()) {  // prepare time: a plain (waiting) copy
      const HostTensor& r = self.layer.router;
      cuda_try(cudaMemcpy(p->router.reserve(r.nbytes(), "router: cudaMalloc"), r.data(), r.nbytes(), cudaMemcpyHostToDevice),
               "router: upload");
    }
  }
  self.cuda.push_back(std::move(p));
  return *self.cuda.back();
}

std::size_t round_tokens(std::int64_t t) {  // workspace for a power of two of tokens: few regrowths
  std::int64_t r = 16;
  while (r < t) r *= 2;
  return static_cast<std::size_t>(r);
}

void run_cuda(PyMoe& self, const TensorView& x, const TensorView& out, const std::optional<InArray>& ids_arr,
              const std::optional<InArray>& weights_arr, int top_k, bool renormalize, std::uintptr_t stream_int, int block,
              const std::optional<nb::callable>& workspace) {
  void* stream = reinterpret_cast<void*>(stream_int);
  moe::MoeArgs a{x, {}, {}, out};
  if (ids_arr) {
    a.topk_ids = to_view(*ids_arr, "topk_ids");
    a.topk_weights = to_view(*weights_arr, "topk_weights");
  } else {
    check_router(self, "topk_ids");
    check_top_k(self, top_k);
  }
  for (const auto& [t, arg] : {std::pair{&a.out, "out"}, std::pair{&a.topk_ids, "topk_ids"}, std::pair{&a.topk_weights, "topk_weights"}})
    if (t->defined() && t->device == Device::cuda && t->device_index != x.device_index)
      fail(ErrorCode::invalid_argument, arg, "an array on x's device " + where(x), where(*t) + " " + describe(*t));
  CudaPrepared& p = prepared(self, x.dtype, x.device_index, stream);
  const std::int64_t T = x.size(0);
  // As on the CPU: k sizes the workspace only; CudaMoe::run checks every argument before it.
  const int k = ids_arr ? (a.topk_ids.rank == 2 ? static_cast<int>(std::clamp<std::int64_t>(a.topk_ids.size(1), 1, self.spec().experts)) : 1)
                        : static_cast<int>(std::clamp<std::int64_t>(top_k, 1, self.spec().experts));
  // The caller's workspace (workspace(nbytes) -> (pointer, bytes), asked with the GIL held), else the binding's own.
  std::uintptr_t ws_ptr = 0;
  std::size_t ws_bytes = 0;
  if (workspace) std::tie(ws_ptr, ws_bytes) = nb::cast<std::pair<std::uintptr_t, std::size_t>>((*workspace)(p.m.workspace_bytes(T, k)));
  nb::gil_scoped_release release;
  DeviceScope scope(x.device_index);
  if (!ids_arr) {
    // The router runs on the device: logits (router_logits_cuda, fp32), then route_cuda; no copy of x, no wait.
    // logits, ids and weights 256-byte aligned in the routing buffer, with room for a power of two of tokens.
    const std::int64_t E = self.spec().experts;
    const auto up256 = [](std::size_t b) { return (b + 255) / 256 * 256; };
    const std::size_t R = round_tokens(T);
    const std::size_t logits_room = up256(4 * R * static_cast<std::size_t>(E));
    const std::size_t ids_room = up256(4 * R * static_cast<std::size_t>(top_k));
    auto* d = static_cast<unsigned char*>(p.routing.reserve(logits_room + 2 * ids_room, "routing: device buffer"));
    const HostTensor& r = self.layer.router;
    const TensorView router(p.router.ptr.get(), r.dtype(), {r.shape()[0], r.shape()[1]}, Device::cuda, x.device_index);
    auto* logits = reinterpret_cast<float*>(d);
    auto* ids = reinterpret_cast<std::int32_t*>(d + logits_room);
    auto* weights = reinterpret_cast<float*>(d + logits_room + ids_room);
    moe::router_logits_cuda(x, router, logits, stream);
    moe::route_cuda(logits, T, static_cast<int>(E), {top_k, renormalize}, ids, weights, stream);
    a.topk_ids = TensorView(ids, DType::i32, {T, top_k}, Device::cuda, x.device_index);
    a.topk_weights = TensorView(weights, DType::f32, {T, top_k}, Device::cuda, x.device_index);
  }
  if (workspace) {
    p.m.run(a, reinterpret_cast<void*>(ws_ptr), ws_bytes, stream, block);
    return;
  }
  if (p.workspace.bytes < p.m.workspace_bytes(T, k))
    p.workspace.reserve(p.m.workspace_bytes(static_cast<std::int64_t>(round_tokens(T)), k), "workspace: cudaMalloc");
  p.m.run(a, p.workspace.ptr.get(), p.workspace.bytes, stream, block);
}
#endif

void run(PyMoe& self, const CheckedX& xc, const OutArray& out_arr, const std::optional<InArray>& ids,
         const std::optional<InArray>& weights, int top_k, bool renormalize, int threads, int block,
         std::uintptr_t stream, std::string_view bits16, const std::optional<nb::callable>& workspace) {
  const TensorView& x = xc.view;
  TensorView out = to_view(out_arr, "out", bits16);
  check_pair(ids, weights);
  if (threads < 0) fail(ErrorCode::invalid_argument, "threads", ">= 0 (0: every hardware thread)", std::to_string(threads));
  if (x.device == Device::cpu) return run_cpu(self, x, out, ids, weights, top_k, renormalize, threads, block);
#ifdef W4A16_PY_HAVE_CUDA
  run_cuda(self, x, out, ids, weights, top_k, renormalize, stream, block, workspace);
#else
  (void)stream;
#endif
}

void reference(const PyMoe& self, const CheckedX& xc, const InArray& ids_arr, const InArray& weights_arr,
               const OutArray& out_arr, std::string_view bits16) {
  moe::MoeArgs a{xc.view, to_view(ids_arr, "topk_ids"), to_view(weights_arr, "topk_weights"),
                 to_view(out_arr, "out", bits16)};
  require_host(a.x, "x");
  require_experts(self, "reference");
  nb::gil_scoped_release release;
  moe::moe_reference(self.layer.weights, a);
}

nb::list prepared_list(const PyMoe& self) {
  nb::list l;
#ifdef W4A16_PY_HAVE_CUDA
  for (const auto& p : self.cuda) {
    nb::dict d;
    d["dtype"] = std::string(dtype_name(p->act));
    d["device_index"] = p->device;
    d["layout"] = std::string(moe::CudaMoe::kLayout);
    d["weight_bytes"] = p->m.device_bytes();
    d["workspace_bytes"] = p->workspace.bytes;
    l.append(d);
  }
#else
  (void)self;
#endif
  return l;
}

std::string explain_block(std::int64_t tokens, int top_k, int experts) {
  if (tokens < 1) fail(ErrorCode::invalid_argument, "tokens", ">= 1", std::to_string(tokens));
  if (top_k < 1 || top_k > experts)
    fail(ErrorCode::invalid_argument, "top_k", "1 <= top_k <= experts = " + std::to_string(experts), std::to_string(top_k));
#ifdef W4A16_PY_HAVE_CUDA
  return moe::CudaMoe::explain_block(tokens, top_k, experts);
#else
  fail(ErrorCode::unsupported, "explain", "a CUDA build of w4a16 (the slot blocks are the CUDA layer's)",
       "a CPU-only build");
#endif
}

// The CUDA layer's stacked layout (CudaMoe::layout_host) of the layer's experts, by name, for a caller that holds it
// (w4a16.torch.W4A16PreparedMoE): {name: numpy array}, bfloat16 as uint16 bits.
nb::dict moe_layout_arrays(const PyMoe& self, std::string_view act_dtype) {
  require_experts(self, "layout_arrays");
  std::optional<DType> act = parse_dtype(act_dtype);
  if (!act || !is_activation_dtype(*act))
    fail(ErrorCode::dtype_mismatch, "dtype", "float16 or bfloat16", "\"" + std::string(act_dtype) + "\"");
#ifdef W4A16_PY_HAVE_CUDA
  return layout_numpy(moe::CudaMoe::layout_host(self.layer.weights, *act));
#else
  fail(ErrorCode::unsupported, "layout_arrays", "a CUDA build of w4a16 (the layout is the CUDA layer's)", "a CPU-only build");
#endif
}

#ifdef W4A16_PY_HAVE_CUDA
// _core.AdoptedMoe: a CudaMoe over the caller's device arrays of its layout (CudaMoe::adopt), run with the caller's
// workspace; `held` keeps the arrays alive where the caller asked (keep=True).
struct AdoptedMoe {
  moe::CudaMoe m;
  int device = 0;
  std::vector<InArray> held;
};

AdoptedMoe* adopt_moe(const nb::dict& arrays, std::int64_t hidden, std::int64_t intermediate, int experts,
                      int group_size, std::string_view scalar, std::string_view act_dtype, int device_index, bool keep) {
  auto p = std::make_unique<AdoptedMoe>();
  p->device = device_index;
  std::optional<DType> act = parse_dtype(act_dtype);
  if (!act || !is_activation_dtype(*act))
    fail(ErrorCode::dtype_mismatch, "dtype", "float16 or bfloat16", "\"" + std::string(act_dtype) + "\"");
  const moe::MoeSpec spec{hidden, intermediate, experts, group_size, parse_scalar(scalar)};
  const std::vector<LayoutView> views = layout_views(arrays, act_dtype, keep ? &p->held : nullptr);
  nb::gil_scoped_release release;
  DeviceScope scope(device_index);
  p->m = moe::CudaMoe::adopt(spec, *act, views);
  return p.release();
}

void run_adopted(const AdoptedMoe& self, const InArray& x_arr, const OutArray& out_arr, const InArray& ids_arr,
                 const InArray& weights_arr, std::uintptr_t workspace, std::size_t workspace_bytes, std::uintptr_t stream,
                 int block) {
  moe::MoeArgs a{to_view(x_arr, "x"), to_view(ids_arr, "topk_ids"), to_view(weights_arr, "topk_weights"), to_view(out_arr, "out")};
  for (const auto& [t, arg] : {std::pair{&a.x, "x"}, std::pair{&a.out, "out"}, std::pair{&a.topk_ids, "topk_ids"},
                               std::pair{&a.topk_weights, "topk_weights"}})
    if (t->device != Device::cuda || t->device_index != self.device)
      fail(ErrorCode::invalid_argument, arg, "an array on cuda:" + std::to_string(self.device) + " (where the experts live)",
           describe(*t) + (t->device == Device::cpu ? " on cpu" : ""));
  nb::gil_scoped_release release;
  DeviceScope scope(self.device);
  self.m.run(a, reinterpret_cast<void*>(workspace), workspace_bytes, reinterpret_cast<void*>(stream), block);
}
#endif

}  // namespace

void bind_moe(nb::module_& m) {
#ifdef W4A16_PY_HAVE_CUDA
  nb::class_<AdoptedMoe>(m, "AdoptedMoe", "A CUDA MoE layer over the caller's arrays of its stacked layout (adopt_moe).")
      .def_prop_ro("device_bytes", [](const AdoptedMoe& a) { return a.m.device_bytes(); })
      .def("workspace_for", [](const AdoptedMoe& a, std::int64_t tokens, int top_k) { return a.m.workspace_bytes(tokens, top_k); },
           nb::arg("tokens"), nb::arg("top_k"), "Bytes of workspace a call of `tokens` tokens and top_k needs.")
      .def("run", &run_adopted, nb::arg("x"), nb::arg("out"), nb::arg("topk_ids"), nb::arg("topk_weights"),
           nb::arg("workspace"), nb::arg("workspace_bytes"), nb::arg("stream") = 0, nb::arg("block") = 0,
           "out [T, H] = the layer of x [T, H] with the given routing (int32 / float32 [T, k]), all on its device; the "
           "caller's workspace (pointer as int, bytes >= workspace_for(T, k)); stream is a cudaStream_t as int.");
  m.def("adopt_moe", &adopt_moe, nb::arg("arrays"), nb::arg("hidden"), nb::arg("intermediate"), nb::arg("experts"),
        nb::arg("group_size"), nb::arg("scalar_type"), nb::arg("dtype"), nb::arg("device_index") = 0, nb::arg("keep") = true,
        nb::rv_policy::take_ownership,
        "A CUDA MoE layer over the caller's arrays of layout cuda.moe.tc16x64.v1 (Moe.layout_arrays' names), read in place; "
        "keep=True: the layer keeps them alive (False: the caller does).");
#endif
  nb::class_<PyMoe>(m, "Moe", "One MoE layer (stacked canonical experts + router), host memory.")
      .def_prop_ro("hidden", [](const PyMoe& s) { return s.spec().hidden; })
      .def_prop_ro("intermediate", [](const PyMoe& s) { return s.spec().intermediate; })
      .def_prop_ro("experts", [](const PyMoe& s) { return s.spec().experts; })
      .def_prop_ro("group_size", [](const PyMoe& s) { return s.spec().group_size; })
      .def_prop_ro("scalar_type", [](const PyMoe& s) { return std::string(scalar_type_name(s.spec().scalar)); })
      .def_prop_ro("scale_dtype", [](const PyMoe& s) { return std::string(dtype_name(s.layer.weights.scale_dtype())); })
      .def_prop_ro("router_dtype",
                   [](const PyMoe& s) {
                     return s.layer.has_router() ? std::optional<std::string>(dtype_name(s.layer.router.dtype()))
                                                 : std::nullopt;
                   })
      .def_prop_ro("nbytes",
                   [](const PyMoe& s) { return s.host_released ? s.released_nbytes : s.layer.weights.nbytes(); })
      .def_prop_ro("host_released", [](const PyMoe& s) { return s.host_released; })
      .def("drop_host", &drop_host, "Frees the experts' host tensors; the CUDA layers prepared so far stay.")
      .def("adopt_prepared", &adopt_prepared, nb::arg("other"),
           "Moves other's prepared CUDA layers of a (dtype, device) this one lacks here (same tensors).")
      .def_prop_ro("shared_expert",
                   [](const PyMoe& s) {
                     return s.layer.shared_expert.empty() ? std::nullopt : std::optional<std::string>(s.layer.shared_expert);
                   })
      .def_prop_ro("routing",
                   [](const PyMoe& s) {
                     return nb::make_tuple(s.layer.routing.top_k, s.layer.routing.renormalize, s.layer.routing_from);
                   },
                   "(top_k, renormalize, where from): the layer's routing (config.json, else the defaults)")
      .def("describe", [](const PyMoe& s) { return s.spec().describe(); })
      .def("take_x",
           [](const PyMoe& s, const InArray& x, std::string_view bits16) {
             return checked_x_tuple(x, x_view(s, x, bits16));
           },
           nb::arg("x"), nb::arg("dtype") = "",
           "Validates x [T, H] and returns (x checked, for run / reference; dtype, device, device_index, T).")
      .def("route", &route, nb::arg("x"), nb::arg("top_k"), nb::arg("renormalize"), nb::arg("dtype") = "",
           "(topk_ids int32 [T, k], topk_weights float32 [T, k]) from the router, on the host.")
      .def("run", &run, nb::arg("x"), nb::arg("out"), nb::arg("topk_ids").none(), nb::arg("topk_weights").none(),
           nb::arg("top_k"), nb::arg("renormalize"), nb::arg("threads"), nb::arg("block"), nb::arg("stream"),
           nb::arg("dtype") = "", nb::arg("workspace").none() = nb::none(),
           "out [T, H] = the MoE layer of x [T, H] (as take_x returned it) on x's device; stream is a cudaStream_t as int. "
           "workspace (CUDA): None (the binding's own, grown as calls grow) or a callable nbytes -> (device pointer, "
           "bytes) giving the call one of at least nbytes.")
      .def("reference", &reference, nb::arg("x"), nb::arg("topk_ids"), nb::arg("topk_weights"), nb::arg("out"),
           nb::arg("dtype") = "", "The f64 oracle (moe_reference), host arrays (x as take_x returned it).")
      .def("prepared", &prepared_list, "The CUDA layers prepared so far (dtype, device, bytes).")
      .def("layout_arrays", &moe_layout_arrays, nb::arg("dtype"),
           "{name: numpy array} of the CUDA layer's stacked layout (cuda.moe.tc16x64.v1) for activations of dtype; "
           "bfloat16 as uint16 bits. A CPU-only build raises UnsupportedError.")
      .def(
          "tensors",
          [](nb::handle self) {
            // Read-only views of the owned stacked tensors, keeping the Moe alive; absent ones None.
            const PyMoe& m = nb::cast<const PyMoe&>(self);
            require_experts(m, "tensors()");
            const moe::MoeWeights& w = m.layer.weights;
            nb::dict d;
            auto put = [&](const char* name, const HostTensor& t) {
              d[name] = t.empty() ? nb::none() : nb::cast(numpy_view(t.view(), self));
            };
            put("w13_qweight", w.w13_qweight);
            put("w13_scales", w.w13_scales);
            put("w13_zeros", w.w13_zeros);
            put("w2_qweight", w.w2_qweight);
            put("w2_scales", w.w2_scales);
            put("w2_zeros", w.w2_zeros);
            put("router", m.layer.router);
            return d;
          },
          "The stacked canonical tensors (moe::MoeWeights) and the router, as read-only numpy views.");

  m.def(
      "load_moe",
      [](const std::string& dir, int layer) {
        if (layer < 0) fail(ErrorCode::invalid_argument, "layer", "a decoder layer index >= 0", std::to_string(layer));
        auto p = std::make_unique<PyMoe>();
        {
          nb::gil_scoped_release release;  // reads and converts every expert
          p->layer = moe::load_moe_layer(dir, layer);
        }
        return p.release();
      },
      nb::arg("dir"), nb::arg("layer"), nb::rv_policy::take_ownership);

  m.def(
      "moe_from_experts",
      [](const std::vector<const Layer*>& gate, const std::vector<const Layer*>& up, const std::vector<const Layer*>& down,
         const std::optional<InArray>& router, std::string_view bits16) {
        std::vector<CanonicalView> g, u, d;
        // (python/w4a16/moe.py checks every element is a QuantizedLinear, naming it)
        for (const auto& [list, views] : {std::pair{&gate, &g}, std::pair{&up, &u}, std::pair{&down, &d}})
          for (const Layer* l : *list) views->push_back(l->q->view());
        const TensorView r = host_view(router, "router", bits16);
        auto p = std::make_unique<PyMoe>();
        {
          nb::gil_scoped_release release;  // copies every expert
          p->layer = moe::moe_layer_from_experts(g, u, d, r);
        }
        return p.release();
      },
      nb::arg("gate"), nb::arg("up"), nb::arg("down"), nb::arg("router").none(), nb::arg("dtype") = "",
      nb::rv_policy::take_ownership);

  m.def(
      "moe_from_canonical",
      [](const InArray& w13_qweight, const InArray& w13_scales, const std::optional<InArray>& w13_zeros,
         const InArray& w2_qweight, const InArray& w2_scales, const std::optional<InArray>& w2_zeros, int group_size,
         std::optional<std::string> scalar, const std::optional<InArray>& router, std::string_view bits16) {
        const moe::MoeStackedView t{host_view(w13_qweight, "w13_qweight"), host_view(w13_scales, "w13_scales", bits16),
                                    host_view(w13_zeros, "w13_zeros"),     host_view(w2_qweight, "w2_qweight"),
                                    host_view(w2_scales, "w2_scales", bits16), host_view(w2_zeros, "w2_zeros")};
        const ScalarType st = scalar ? parse_scalar(*scalar) : (w13_zeros ? ScalarType::uint4 : ScalarType::uint4b8);
        const TensorView r = host_view(router, "router", bits16);
        auto p = std::make_unique<PyMoe>();
        {
          nb::gil_scoped_release release;  // copies every expert
          p->layer = moe::moe_layer_from_stacked(t, group_size, st, r);
        }
        return p.release();
      },
      nb::arg("w13_qweight"), nb::arg("w13_scales"), nb::arg("w13_zeros").none(), nb::arg("w2_qweight"),
      nb::arg("w2_scales"), nb::arg("w2_zeros").none(), nb::arg("group_size"), nb::arg("scalar_type").none(),
      nb::arg("router").none(), nb::arg("dtype") = "", nb::rv_policy::take_ownership);

  m.def("moe_explain_block", &explain_block, nb::arg("tokens"), nb::arg("top_k"), nb::arg("experts"),
        "CudaMoe::explain_block: the slots per block chosen for T tokens, and why (CUDA builds).");
}

}  // namespace w4a16::py
