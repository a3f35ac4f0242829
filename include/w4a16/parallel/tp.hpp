// Tensor parallelism for W4A16 linears: sharding (canonical layout and AWQ/GPTQ checkpoints,
// each rank reading only its slice) and the NCCL collectives that join the shards.
//
//   column-parallel (split N): rank r holds output rows [r N/tp, (r+1) N/tp); y = all-gather.
//     Needs N % tp == 0 and, with zero points, (N/tp) % 8 == 0 (8 zeros per int32 along N).
//   row-parallel (split K): rank r holds input channels [r K/tp, (r+1) K/tp); y = all-reduce(sum).
//     Needs (K/tp) % group_size == 0 (whole groups per rank; channelwise cannot be split) and
//     (K/tp) % 8 == 0. The bias is added by rank 0 only, so the sum carries it once.
//     Act-order: the canonical K order is the sorted-group order, so rank r owns canonical
//     channels [r K/tp, ...) = whole groups, whose original channels lie anywhere in K. The
//     shard therefore carries `input_index` (the original channels it reads, in its order) and
//     a TP layer gathers x[:, input_index] from the full input: act-order row-parallel layers
//     need the whole input on every rank (replicated or all-gathered first).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "w4a16/core/canonical.hpp"
#include "w4a16/io/checkpoint.hpp"

namespace w4a16::parallel {

enum class Split { column, row };
std::string_view split_name(Split s);

struct ShardSpec {
  Split split = Split::column;
  int rank = 0;
  int world = 1;
};

// Throws invalid_argument / shape_mismatch naming the condition if `spec` cannot be split so.
void check_split(const QuantSpec& full, const ShardSpec& s);

struct Shard {
  QuantizedLinear weights;  // canonical, partition shapes; keeps perm for column splits, none for row splits
  std::vector<std::int32_t> input_index;  // row split with act-order: original channels read; else empty
  std::int64_t n_offset = 0, k_offset = 0;  // where the shard sits in the full layer
  std::int64_t n_full = 0, k_full = 0;
};

// Shards a host canonical layer.
Shard shard_canonical(const CanonicalView& full, const ShardSpec& s);

// Reads rank `s.rank`'s slice of one quantized linear straight from a checkpoint's files,
// touching only the bytes of that slice (act-order row splits excepted: they read the whole
// layer, see above). `read` observes every byte range copied from a file (for tests).
using ReadObserver = std::function<void(const std::string& tensor, std::size_t offset, std::size_t bytes)>;
Shard load_linear_shard(const io::HfCheckpoint& ckpt, const std::string& prefix, const ShardSpec& s,
                        const ReadObserver& observe = {});

}  // namespace w4a16::parallel
