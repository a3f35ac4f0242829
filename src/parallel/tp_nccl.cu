// NCCL communicator and TpLinear (include/w4a16/parallel/nccl.hpp).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "common.cuh"
#include "w4a16/core/error.hpp"
#include "w4a16/parallel/nccl.hpp"

namespace w4a16::parallel {

namespace {

void nccl_try(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) fail(ErrorCode::cuda_error, std::string(what) + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::f32: return ncclFloat32;
    default: fail(ErrorCode::dtype_mismatch, "dtype", "float16, bfloat16 or float32 for a collective", std::string(dtype_name(t)));
  }
}

int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}

// x_local[m, j] = x[m, index[j]]: the act-order row shard's channels out of the whole input.
template <class T>
__global__ void gather_columns(const T* __restrict__ x, std::int64_t x_stride, const std::int32_t* __restrict__ index,
                               std::int64_t k_local, T* __restrict__ out, std::int64_t m) {
  std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= m * k_local) return;
  std::int64_t r = i / k_local, j = i % k_local;
  out[i] = x[r * x_stride + index[j]];
}

}  // namespace

std::shared_ptr<Communicator> Communicator::init(int rank, int world, const std::string& id_file) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast off: it can take shared hosts' GPUs down
  if (world < 1 || rank < 0 || rank >= world)
    fail(ErrorCode::invalid_argument, "rank", "0 <= rank < world", std::to_string(rank) + " of " + std::to_string(world));
  ncclUniqueId id;
  if (rank == 0) {
    nccl_try(ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (world > 1) {
      std::string tmp = id_file + ".tmp";
      std::ofstream f(tmp, std::ios::binary);
      f.write(reinterpret_cast<const char*>(&id), sizeof id);
      f.close();
      if (!f || std::rename(tmp.c_str(), id_file.c_str()) != 0)
        fail(ErrorCode::io_error, "W4A16_NCCL_ID_FILE", "a writable path", id_file);
    }
  } else {
    if (id_file.empty()) fail(ErrorCode::invalid_argument, "W4A16_NCCL_ID_FILE", "a path shared by all ranks", "unset");
    for (int tries = 0;; ++tries) {
      std::ifstream f(id_file, std::ios::binary);
      if (f && f.read(reinterpret_cast<char*>(&id), sizeof id)) break;
      if (tries > 600) fail(ErrorCode::io_error, "W4A16_NCCL_ID_FILE", "rank 0 to write the NCCL id within 60 s", id_file);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  auto c = std::shared_ptr<Communicator>(new Communicator());
  c->rank_ = rank;
  c->world_ = world;
  nccl_try(ncclCommInitRank(&c->comm_, world, id, rank), "ncclCommInitRank");
  return c;
}

std::shared_ptr<Communicator> Communicator::from_env() {
  int rank = env_int("RANK", 0), world = env_int("WORLD_SIZE", 1), local = env_int("LOCAL_RANK", rank);
  W4A16_CUDA_TRY(cudaSetDevice(local));
  const char* f = std::getenv("W4A16_NCCL_ID_FILE");
  return init(rank, world, f ? f : "");
}

Communicator::~Communicator() {
  if (comm_) ncclCommDestroy(comm_);
}

void Communicator::all_reduce_sum(void* buf, std::size_t count, DType dtype, cudaStream_t stream) const {
  nccl_try(ncclAllReduce(buf, buf, count, nccl_type(dtype), ncclSum, comm_, stream), "ncclAllReduce");
}

void Communicator::all_gather(const void* send, void* recv, std::size_t count, DType dtype, cudaStream_t stream) const {
  nccl_try(ncclAllGather(send, recv, count, nccl_type(dtype), comm_, stream), "ncclAllGather");
}

static Linear make_local(const Shard& shard, const LinearOptions& opt) { return Linear::create(shard.weights.view(), opt); }

TpLinear::TpLinear(const Shard& shard, Split split, std::shared_ptr<Communicator> comm, const LinearOptions& opt)
    : split_(split), comm_(std::move(comm)), local_(make_local(shard, opt)) {
  if (opt.device != Device::cuda) fail(ErrorCode::invalid_argument, "device", "cuda for a TpLinear", "cpu");
  n_full_ = shard.n_full;
  k_full_ = shard.k_full;
  n_local_ = shard.weights.spec().n;
  k_local_ = shard.weights.spec().k;
  max_m_ = opt.max_m;
  dtype_ = opt.act_dtype;
  const std::size_t es = dtype_size(dtype_);
  std::size_t extra = 0;
  if (split_ == Split::column) extra = 2 * static_cast<std::size_t>(max_m_ * n_full_) * es;  // local y + gathered
  if (!shard.input_index.empty()) {
    std::int32_t* d = nullptr;
    W4A16_CUDA_TRY(cudaMalloc(&d, shard.input_index.size() * sizeof(std::int32_t)));
    input_index_ = std::shared_ptr<std::int32_t>(d, [](std::int32_t* p) { cudaFree(p); });
    W4A16_CUDA_TRY(cudaMemcpy(d, shard.input_index.data(), shard.input_index.size() * 4, cudaMemcpyHostToDevice));
    extra += static_cast<std::size_t>(max_m_ * k_local_) * es;
  }
  ws_bytes_ = (local_.workspace_bytes() + 255) / 256 * 256 + extra;
}

void TpLinear::run(const TensorView& x, const TensorView& out, void* workspace, cudaStream_t stream) const {
  const std::int64_t m = x.shape[0];
  if (m > max_m_) fail(ErrorCode::shape_mismatch, "x", "at most max_m = " + std::to_string(max_m_) + " rows", describe(x));
  check_shape(out, "out", {m, n_full_}, "[M, N_full]");
  if (!out.is_contiguous()) fail(ErrorCode::layout_mismatch, "out", "contiguous [M, N_full] (the collective writes it whole)", describe(out));
  auto* base = static_cast<unsigned char*>(workspace);
  void* inner_ws = base;
  unsigned char* extra = base + (local_.workspace_bytes() + 255) / 256 * 256;
  const std::size_t es = dtype_size(dtype_);

  TensorView xin = x;
  if (input_index_) {
    check_shape(x, "x", {m, k_full_}, "[M, K_full] (act-order row split reads the whole input)");
    TensorView g(extra, dtype_, {m, k_local_}, Device::cuda, x.device_index);
    extra += static_cast<std::size_t>(max_m_ * k_local_) * es;
    std::int64_t total = m * k_local_;
    unsigned blocks = static_cast<unsigned>((total + 255) / 256);
    if (total > 0) {
      if (es != 2) fail(ErrorCode::dtype_mismatch, "x", "float16 or bfloat16", describe(x));
      gather_columns<std::uint16_t><<<blocks, 256, 0, stream>>>(static_cast<const std::uint16_t*>(x.data), x.stride[0],
                                                                input_index_.get(), k_local_, static_cast<std::uint16_t*>(g.data), m);
      W4A16_CUDA_TRY(cudaGetLastError());
    }
    xin = g;
  }

  if (split_ == Split::row) {
    local_.run(xin, out, inner_ws, stream);  // partial sums (bias on rank 0 only)
    comm_->all_reduce_sum(out.data, static_cast<std::size_t>(m * n_full_), dtype_, stream);
    return;
  }
  // Column split: y_local [M, N/tp] -> all-gather [tp][M][N/tp] -> out[:, r N/tp : (r+1) N/tp].
  TensorView ylocal(extra, dtype_, {m, n_local_}, Device::cuda, x.device_index);
  unsigned char* gathered = extra + static_cast<std::size_t>(max_m_ * n_full_) * es;
  local_.run(xin, ylocal, inner_ws, stream);
  comm_->all_gather(ylocal.data, gathered, static_cast<std::size_t>(m * n_local_), dtype_, stream);
  for (int r = 0; r < comm_->world(); ++r)
    W4A16_CUDA_TRY(cudaMemcpy2DAsync(static_cast<unsigned char*>(out.data) + static_cast<std::size_t>(r * n_local_) * es,
                                     static_cast<std::size_t>(n_full_) * es,
                                     gathered + static_cast<std::size_t>(r) * static_cast<std::size_t>(m * n_local_) * es,
                                     static_cast<std::size_t>(n_local_) * es, static_cast<std::size_t>(n_local_) * es,
                                     static_cast<std::size_t>(m), cudaMemcpyDeviceToDevice, stream));
}

}  // namespace w4a16::parallel
