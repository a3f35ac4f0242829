// Host side of the CUDA MoE: prepare (per-expert tc16x64 packing, one upload), path choice,
// workspace plan, argument checks and launches (src/kernels/cuda/moe). Built with CUDA only.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common.cuh"
#include "moe/moe_kernels.cuh"
#include "w4a16/core/error.hpp"
#include "w4a16/moe/moe_cuda.hpp"

namespace w4a16::moe {

namespace kc = w4a16::kernels::cuda::moe;

namespace {
std::size_t up256(std::size_t b) { return (b + 255) / 256 * 256; }
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// What every CudaMoe (create, layout_specs, adopt) needs of the layer.
void check_cuda_spec(const MoeSpec& s, DType act) {
  if (!is_activation_dtype(act)) fail(ErrorCode::dtype_mismatch, "act", "float16 or bfloat16", std::string(dtype_name(act)));
  s.validate("moe spec");
  if (s.hidden % 64 != 0 || s.intermediate % 64 != 0)
    fail(ErrorCode::unsupported, "moe spec", "H % 64 == 0 and I % 64 == 0 (whole tc16x64 tiles)", s.describe());
  if (s.experts > 4096)
    fail(ErrorCode::unsupported, "moe spec", "E <= 4096 (the alignment CTA holds per-expert counts)", s.describe());
}

}  // namespace

void router_logits_cuda(const TensorView& x, const TensorView& router, float* logits, void* stream) {
  const std::string want_x = "float16 or bfloat16 [T, H] on a GPU, rows 16-byte aligned";
  if (x.device != Device::cuda || !is_activation_dtype(x.dtype) || x.rank != 2)
    fail(ErrorCode::invalid_argument, "x", want_x, describe(x));
  const std::int64_t T = x.size(0), H = x.size(1);
  const std::string want_r = "float16 or bfloat16 [E, H] with H = " + std::to_string(H) + " on x's GPU, contiguous";
  if (router.device != Device::cuda || router.device_index != x.device_index || !is_activation_dtype(router.dtype) ||
      router.rank != 2)
    fail(ErrorCode::invalid_argument, "router", want_r, describe(router));
  if (router.size(1) != H) fail(ErrorCode::shape_mismatch, "router", want_r, describe(router));
  check_contiguous(router, "router");
  const std::int64_t E = router.size(0);
  if (E < 1 || E > kc::kMaxExperts)
    fail(ErrorCode::unsupported, "router", "1.." + std::to_string(kc::kMaxExperts) + " experts", describe(router));
  if (H % 8 != 0) fail(ErrorCode::unsupported, "x", "H % 8 == 0 (16-byte chunks of the rows)", describe(x));
  if (x.stride[1] != 1 || (T > 1 && x.stride[0] % 8 != 0))
    fail(ErrorCode::layout_mismatch, "x", "rows contiguous with a row stride that is a multiple of 8", describe(x));
  check_aligned(x.data, 16, "x");
  check_aligned(router.data, 16, "router");
  if (logits == nullptr) fail(ErrorCode::invalid_argument, "logits", "device memory of T x E floats", "null");
  kc::launch_router_logits(x.data, x.stride[0], x.dtype == DType::bf16, router.data, router.dtype == DType::bf16, T,
                           static_cast<int>(H), static_cast<int>(E), logits, as_stream(stream));
}

void route_cuda(const float* logits, std::int64_t tokens, int experts, const RoutingOptions& opt,
                std::int32_t* topk_ids, float* topk_weights, void* stream) {
  if (experts < 1 || experts > kc::kMaxExperts)
    fail(ErrorCode::unsupported, "experts", "1.." + std::to_string(kc::kMaxExperts), std::to_string(experts));
  if (opt.top_k < 1 || opt.top_k > std::min(experts, 32))
    fail(ErrorCode::invalid_argument, "top_k", "1 <= top_k <= min(E, 32)", std::to_string(opt.top_k));
  kc::launch_route(logits, tokens, experts, opt.top_k, opt.renormalize, topk_ids, topk_weights, as_stream(stream));
}

std::size_t align_scratch_bytes(std::int64_t tokens, int top_k, int experts) {
  if (experts < 1 || experts > 4096) fail(ErrorCode::unsupported, "experts", "1..4096", std::to_string(experts));
  return kc::align_scratch_bytes(tokens, top_k, experts);
}

void align_cuda(const std::int32_t* topk_ids, std::int64_t tokens, int top_k, int experts, int block,
                std::int32_t* sorted_ids, std::int32_t* block_expert, std::int32_t* total, void* scratch, void* stream) {
  if (experts < 1 || experts > 4096)
    fail(ErrorCode::unsupported, "experts", "1..4096 (one CTA holds the per-expert counts)", std::to_string(experts));
  if (block < 1) fail(ErrorCode::invalid_argument, "block", ">= 1", std::to_string(block));
  if (top_k < 1 || top_k > experts) fail(ErrorCode::invalid_argument, "top_k", "1..E", std::to_string(top_k));
  if (scratch == nullptr || reinterpret_cast<std::uintptr_t>(scratch) % 4 != 0)
    fail(ErrorCode::invalid_argument, "scratch", "4-byte aligned device memory of align_scratch_bytes",
         scratch == nullptr ? "null" : "a misaligned pointer");
  if (tokens == 0) return;
  kc::launch_align(topk_ids, tokens, top_k, experts, block, sorted_ids, block_expert, total, static_cast<std::int32_t*>(scratch),
                   nullptr, as_stream(stream));
}

CudaMoe CudaMoe::create(const MoeWeights& w, DType act, void* stream) {
  // The layout's arrays (layout_host), uploaded into one allocation at 256-byte aligned offsets.
  const std::vector<LayoutArray> arrays = layout_host(w, act);
  std::vector<std::size_t> offs;
  std::size_t total = 0;
  for (const LayoutArray& a : arrays) {
    offs.push_back(total);
    total += up256(a.bytes.size());
  }
  void* dev = nullptr;
  W4A16_CUDA_TRY(cudaMalloc(&dev, total));
  CudaMoe m;
  m.mem_ = std::shared_ptr<void>(dev, [](void* p) { cudaFree(p); });
  m.spec_ = w.spec();
  m.act_ = act;
  auto* d = static_cast<unsigned char*>(dev);
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    W4A16_CUDA_TRY(cudaMemcpyAsync(d + offs[i], arrays[i].bytes.data(), arrays[i].bytes.size(), cudaMemcpyHostToDevice,
                                   as_stream(stream)));
    m.set_array(arrays[i].name, d + offs[i]);
  }
  W4A16_CUDA_TRY(cudaStreamSynchronize(as_stream(stream)));  // `arrays` die here; prepare, not run
  m.bytes_ = total;
  return m;
}

void CudaMoe::set_array(const std::string& name, const void* p) {
  (name == "w13_qweight" ? w13_q_ : name == "w13_scales" ? w13_s_ : name == "w13_zeros" ? w13_z_
   : name == "w2_qweight" ? w2_q_ : name == "w2_scales" ? w2_s_ : w2_z_) = p;
}

std::vector<LayoutSpec> CudaMoe::layout_specs(const MoeSpec& s, DType act) {
  check_cuda_spec(s, act);
  const Tc16x64Sizes a = tc16x64_sizes(s.w13_spec()), b = tc16x64_sizes(s.w2_spec());
  const std::int64_t E = s.experts;
  std::vector<LayoutSpec> v = {{"w13_qweight", DType::i32, {E, a.n_pad / 16, a.k_pad / 64, 128}},
                               {"w13_scales", act, {E, a.groups, a.n_pad}}};
  if (s.scalar == ScalarType::uint4) v.push_back({"w13_zeros", DType::u8, {E, a.groups, a.n_pad / 2}});
  v.push_back({"w2_qweight", DType::i32, {E, b.n_pad / 16, b.k_pad / 64, 128}});
  v.push_back({"w2_scales", act, {E, b.groups, b.n_pad}});
  if (s.scalar == ScalarType::uint4) v.push_back({"w2_zeros", DType::u8, {E, b.groups, b.n_pad / 2}});
  return v;
}

std::vector<LayoutArray> CudaMoe::layout_host(const MoeWeights& w, DType act) {
  const MoeSpec& s = w.spec();
  std::vector<LayoutArray> out;
  for (const LayoutSpec& l : layout_specs(s, act)) out.push_back(layout_array(l, nullptr));
  auto at = [&](std::string_view name, std::size_t expert, std::size_t bytes) -> void* {  // expert's part of an array
    for (LayoutArray& a : out)
      if (a.name == name) return a.bytes.data() + expert * bytes;
    return nullptr;  // the zeros of uint4b8: tc16x64_pack writes none
  };
  const Tc16x64Sizes a = tc16x64_sizes(s.w13_spec()), b = tc16x64_sizes(s.w2_spec());
  for (std::size_t e = 0; e < static_cast<std::size_t>(s.experts); ++e) {
    tc16x64_pack(w.w13(static_cast<int>(e)), act, at("w13_qweight", e, a.qweight_bytes), at("w13_scales", e, a.scales_bytes),
                 at("w13_zeros", e, a.zeros_bytes));
    tc16x64_pack(w.w2(static_cast<int>(e)), act, at("w2_qweight", e, b.qweight_bytes), at("w2_scales", e, b.scales_bytes),
                 at("w2_zeros", e, b.zeros_bytes));
  }
  return out;
}

CudaMoe CudaMoe::adopt(const MoeSpec& s, DType act, const std::vector<LayoutView>& arrays) {
  const std::vector<LayoutSpec> specs = layout_specs(s, act);
  const std::vector<const TensorView*> views = check_layout_views(arrays, specs, kLayout);
  int dev = 0;
  W4A16_CUDA_TRY(cudaGetDevice(&dev));
  CudaMoe m;
  m.spec_ = s;
  m.act_ = act;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const TensorView& t = *views[i];
    if (t.device_index != dev)
      fail(ErrorCode::invalid_argument, specs[i].name, "an array on cuda:" + std::to_string(dev) + " (the current device)", describe(t));
    m.set_array(specs[i].name, t.data);
    m.bytes_ += t.nbytes();
  }
  m.mem_ = std::shared_ptr<void>(const_cast<void*>(m.w13_q_), [](void*) {});  // not owned: the caller's arrays
  return m;
}

namespace {
struct WsLayout {
  std::size_t sorted = 0, block_expert = 0, total = 0, scratch = 0, lists = 0, h = 0, y = 0, xg = 0, hg = 0, bytes = 0;
  int align_block = 0;  // the alignment's block: `block`, but 64 for block 128 (its block lists: launch_grouped)
  int cap128 = 0;       // block 128: entries of the 128-row block list
};
// Slot blocks a launch may use (its grid): sum_e ceil(c_e / block) <= S / block + (experts with a slot)
// <= S / block + min(E, S), each holding a real slot (<= S) and within the capacity; blocks past the
// alignment's total exit at once, so the grid stays tight.
std::int64_t max_blocks(const MoeSpec& s, std::int64_t T, int k, int block) {
  const std::int64_t S = T * k, cap = aligned_capacity(T, k, s.experts, block);
  return std::min({S, cap / block, S / block + std::min<std::int64_t>(s.experts, S)});
}
WsLayout ws_layout(const MoeSpec& s, std::int64_t T, int k, int block) {
  const std::size_t S = static_cast<std::size_t>(T * k);
  WsLayout l;
  l.align_block = block == 128 ? 64 : block;
  const std::size_t cap = block > 1 ? static_cast<std::size_t>(aligned_capacity(T, k, s.experts, l.align_block)) : 0;
  std::size_t off = 0;
  l.sorted = off;
  off += up256(4 * cap);
  l.block_expert = off;
  off += up256(4 * (block > 1 ? cap / static_cast<std::size_t>(l.align_block) : 0));
  l.total = off;
  off += 256;
  l.scratch = off;  // the alignment launch's (block > 1; block 8 may align inside the ring kernels instead)
  off += up256(block > 1 ? kc::align_scratch_bytes(T, k, static_cast<int>(s.experts)) : 0);
  l.lists = off;  // block 128: row128 / expert128 [cap128], row64 / expert64 [E]
  if (block == 128) {
    l.cap128 = kc::list128_capacity(T, k, static_cast<int>(s.experts));
    off += up256(4 * static_cast<std::size_t>(l.cap128)) * 2 + up256(4 * static_cast<std::size_t>(s.experts)) * 2;
  }
  l.h = off;
  off += up256(2 * S * static_cast<std::size_t>(s.intermediate));
  l.y = off;
  off += up256(4 * S * static_cast<std::size_t>(s.hidden));
  if (block >= 16) {  // the grouped wgmma path (blocks 16..128 on sm_90a): x rows and silu(gate) * up in sorted order, max_blocks * block rows
    const std::size_t rows = static_cast<std::size_t>(max_blocks(s, T, k, l.align_block) * l.align_block);
    l.xg = off;
    off += up256(2 * rows * static_cast<std::size_t>(s.hidden));
    l.hg = off;
    off += up256(2 * rows * static_cast<std::size_t>(s.intermediate));
  }
  l.bytes = off + 256;  // + 256: room to align the caller's base
  return l;
}
}  // namespace

std::size_t CudaMoe::workspace_bytes(std::int64_t max_tokens, int top_k) const {
  std::size_t m = 0;
  for (int b : {1, 8, 16, 32, 64, 128}) m = std::max(m, ws_layout(spec_, max_tokens, top_k, b).bytes);
  return m;
}

void CudaMoe::run(const MoeArgs& a, void* workspace, std::size_t workspace_bytes, void* stream, int block) const {
  const MoeSpec& s = spec_;
  if (!mem_) fail(ErrorCode::invalid_argument, "CudaMoe", "weights prepared by CudaMoe::create", "an empty object");
  check_dtype(a.x, "x", act_);
  if (a.x.rank != 2 || a.x.size(1) != s.hidden)
    fail(ErrorCode::shape_mismatch, "x", "[T, H] with H = " + std::to_string(s.hidden), describe(a.x));
  const std::int64_t T = a.x.size(0);
  check_dtype(a.topk_ids, "topk_ids", DType::i32);
  if (a.topk_ids.rank != 2 || a.topk_ids.size(0) != T)
    fail(ErrorCode::shape_mismatch, "topk_ids", "int32 [T, k] with T = " + std::to_string(T), describe(a.topk_ids));
  const int k = static_cast<int>(a.topk_ids.size(1));
  if (k < 1 || k > s.experts)
    fail(ErrorCode::shape_mismatch, "topk_ids", "k in [1, E = " + std::to_string(s.experts) + "]", describe(a.topk_ids));
  check_dtype(a.topk_weights, "topk_weights", DType::f32);
  check_shape(a.topk_weights, "topk_weights", {T, k}, "[T, k]");
  check_dtype(a.out, "out", act_);
  check_shape(a.out, "out", {T, s.hidden}, "[T, H]");
  for (const auto* t : {&a.x, &a.topk_ids, &a.topk_weights, &a.out}) {
    const char* name = t == &a.x ? "x" : t == &a.topk_ids ? "topk_ids" : t == &a.topk_weights ? "topk_weights" : "out";
    check_device(*t, name, Device::cuda);
    check_contiguous(*t, name);
  }
  if (block == 0) block = choose_block(T, k, s.experts);
  if (!kc::is_supported_block(block))
    fail(ErrorCode::invalid_argument, "block", "0 (choose), 1, 8, 16, 32, 64 or 128", std::to_string(block));
  if (block == 128 && T > 0 && !kc::grouped_supported()) block = 64;  // no wgmma here: the mma.sync kernel's largest block
  if (block == 16 && T > 0 && !kc::grouped_path(16)) block = 32;      // no grouped path here (or W4A16_MOE_WGMMA=0): mma.sync's least
  const WsLayout l = ws_layout(s, T, k, block);
  if (workspace == nullptr || workspace_bytes < l.bytes)
    fail(ErrorCode::invalid_argument, "workspace", ">= " + std::to_string(l.bytes) + " bytes (workspace_bytes)",
         std::to_string(workspace == nullptr ? 0 : workspace_bytes) + " bytes");
  if (T == 0) return;
  auto* ws = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(workspace) + 255) / 256 * 256);
  const Tc16x64Sizes a13 = tc16x64_sizes(s.w13_spec()), a2 = tc16x64_sizes(s.w2_spec());
  kc::MoeRunDev r;
  r.w13 = {w13_q_, static_cast<const std::uint16_t*>(w13_s_), static_cast<const std::uint8_t*>(w13_z_),
           static_cast<int>(2 * s.intermediate), static_cast<int>(s.hidden),
           static_cast<int>(s.w13_spec().group_len()), static_cast<int>(a13.groups)};
  r.w2 = {w2_q_, static_cast<const std::uint16_t*>(w2_s_), static_cast<const std::uint8_t*>(w2_z_),
          static_cast<int>(s.hidden), static_cast<int>(s.intermediate), static_cast<int>(s.w2_spec().group_len()),
          static_cast<int>(a2.groups)};
  r.hidden = static_cast<int>(s.hidden);
  r.inter = static_cast<int>(s.intermediate);
  r.top_k = k;
  r.tokens = T;
  r.bf16 = act_ == DType::bf16;
  r.zeros = s.scalar == ScalarType::uint4;
  r.x = a.x.data;
  r.topk_ids = a.topk_ids.ptr<const std::int32_t>();
  r.topk_weights = a.topk_weights.ptr<const float>();
  r.out = a.out.data;
  r.block = block;
  r.experts = static_cast<int>(s.experts);  // block > 1: launch_fused_moe aligns (or its ring kernels do)
  r.h = ws + l.h;
  r.y = reinterpret_cast<float*>(ws + l.y);
  if (block > 1) {
    auto* sorted = reinterpret_cast<std::int32_t*>(ws + l.sorted);
    auto* bexp = reinterpret_cast<std::int32_t*>(ws + l.block_expert);
    auto* total = reinterpret_cast<std::int32_t*>(ws + l.total);
    r.sorted_ids = sorted;
    r.block_expert = bexp;
    r.total = total;
    r.align_scratch = reinterpret_cast<std::int32_t*>(ws + l.scratch);
    r.max_blocks = static_cast<int>(max_blocks(s, T, k, l.align_block));
    r.xg = ws + l.xg;
    r.hg = ws + l.hg;
    r.grouped_rows = static_cast<std::int64_t>(r.max_blocks) * l.align_block;
    if (block == 128) {
      auto* p = ws + l.lists;
      const std::size_t a = up256(4 * static_cast<std::size_t>(l.cap128)), b = up256(4 * static_cast<std::size_t>(s.experts));
      r.lists.row128 = reinterpret_cast<std::int32_t*>(p);
      r.lists.expert128 = reinterpret_cast<std::int32_t*>(p + a);
      r.lists.row64 = reinterpret_cast<std::int32_t*>(p + 2 * a);
      r.lists.expert64 = reinterpret_cast<std::int32_t*>(p + 2 * a + b);
      r.lists.cap128 = l.cap128;
    }
  }
  kc::launch_fused_moe(r, as_stream(stream));
}

}  // namespace w4a16::moe
