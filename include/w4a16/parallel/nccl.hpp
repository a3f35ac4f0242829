// NCCL communicator and the tensor-parallel linear (CUDA builds only).
//   One process per GPU. Environment (torchrun-compatible names): RANK, WORLD_SIZE, LOCAL_RANK
//   (GPU index; defaults to RANK), W4A16_NCCL_ID_FILE (a path on the host's file system where
//   rank 0 writes the NCCL unique id and the others read it). scripts/tp-launch sets them.
//   NVLink multicast (NVLS) is switched off before NCCL initialises (NCCL_NVLS_ENABLE=0).
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "w4a16/linear.hpp"
#include "w4a16/parallel/tp.hpp"

namespace w4a16::parallel {

class Communicator {
 public:
  // Reads the environment above, selects the GPU LOCAL_RANK, and initialises NCCL.
  static std::shared_ptr<Communicator> from_env();
  // world == 1 needs no id exchange (the single-GPU test path goes through NCCL all the same).
  static std::shared_ptr<Communicator> init(int rank, int world, const std::string& id_file);
  ~Communicator();
  int rank() const { return rank_; }
  int world() const { return world_; }
  ncclComm_t comm() const { return comm_; }
  void all_reduce_sum(void* buf, std::size_t count, DType dtype, cudaStream_t stream) const;
  // recv = [world][count] (rank-major), send = this rank's [count].
  void all_gather(const void* send, void* recv, std::size_t count, DType dtype, cudaStream_t stream) const;

 private:
  Communicator() = default;
  int rank_ = 0, world_ = 1;
  ncclComm_t comm_ = nullptr;
};

// A column- or row-parallel W4A16 linear on one rank: the local shard through the registry's
// chosen kernel, then the collective on the caller's stream. run() never allocates.
class TpLinear {
 public:
  TpLinear(const Shard& shard, Split split, std::shared_ptr<Communicator> comm, const LinearOptions& opt);
  // Input: column split and row split without act-order: the rank's input ([M, K] whole for
  // column, [M, K/tp] local for row); row split with act-order: the whole input [M, K_full].
  // Output: the whole y [M, N_full] (device, contiguous rows), identical on every rank.
  void run(const TensorView& x, const TensorView& out, void* workspace, cudaStream_t stream) const;
  std::size_t workspace_bytes() const { return ws_bytes_; }
  const Linear& local() const { return local_; }

 private:
  Split split_;
  std::shared_ptr<Communicator> comm_;
  Linear local_;
  std::int64_t n_full_, k_full_, n_local_, k_local_, max_m_;
  DType dtype_;
  std::shared_ptr<std::int32_t> input_index_;  // device [k_local] (act-order row split) or null
  std::size_t ws_bytes_ = 0;
};

}  // namespace w4a16::parallel
