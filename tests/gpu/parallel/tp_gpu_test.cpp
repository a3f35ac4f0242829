// Tensor parallelism on one GPU: world size 1 through the same NCCL path (all-gather for a
// column split, all-reduce for a row split) equals the unsplit layer. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "testutil.hpp"
#include "w4a16/linear.hpp"
#include "w4a16/parallel/nccl.hpp"

using namespace w4a16;

namespace {
bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
template <class T>
struct Dev {
  T* p = nullptr;
  explicit Dev(std::size_t n) { EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess); }
  ~Dev() { cudaFree(p); }
};
}  // namespace

TEST(TensorParallelGpu, WorldSizeOneThroughNcclEqualsTheLayer) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible (cudaGetDeviceCount found none)";
  auto comm = parallel::Communicator::init(0, 1, "");
  for (bool act_order : {false, true})
    for (parallel::Split split : {parallel::Split::column, parallel::Split::row}) {
      SCOPED_TRACE(std::string(parallel::split_name(split)) + (act_order ? " act-order" : ""));
      QuantSpec spec{1024, 2048, 128, ScalarType::uint4};
      QuantizedLinear q = test::random_linear(spec, DType::f16, true, act_order);
      const std::int64_t m = 5;
      std::vector<std::uint16_t> x = test::random_act(m, spec.k, DType::f16);
      LinearOptions opt;
      opt.device = Device::cuda;
      opt.act_dtype = DType::f16;
      opt.max_m = 16;
      parallel::Shard shard = parallel::shard_canonical(q.view(), {split, 0, 1});
      parallel::TpLinear tp(shard, split, comm, opt);
      Linear plain = Linear::create(q.view(), opt);

      Dev<std::uint16_t> dx(x.size()), dy(static_cast<std::size_t>(m * spec.n)), dy2(static_cast<std::size_t>(m * spec.n));
      Dev<unsigned char> ws(std::max(tp.workspace_bytes(), plain.workspace_bytes()) + 1);
      ASSERT_EQ(cudaMemcpy(dx.p, x.data(), x.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(dy.p, 0xff, m * spec.n * 2), cudaSuccess);  // poison (NaN)
      TensorView xv(dx.p, DType::f16, {m, spec.k}, Device::cuda), yv(dy.p, DType::f16, {m, spec.n}, Device::cuda),
          y2v(dy2.p, DType::f16, {m, spec.n}, Device::cuda);
      tp.run(xv, yv, ws.p, nullptr);
      plain.run(xv, y2v, ws.p, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<std::uint16_t> y(m * spec.n), y2(m * spec.n);
      cudaMemcpy(y.data(), dy.p, y.size() * 2, cudaMemcpyDeviceToHost);
      cudaMemcpy(y2.data(), dy2.p, y2.size() * 2, cudaMemcpyDeviceToHost);
      EXPECT_EQ(y, y2);
      std::vector<double> ref = test::gemm_f64(test::to_f64(x.data(), DType::f16, m, spec.k, spec.k), test::dequant_f64(q),
                                               test::bias_f64(q), m, spec.n, spec.k);
      EXPECT_LT(test::rel_error(test::to_f64(y.data(), DType::f16, m, spec.n, spec.n), ref), test::kTolF16);
    }
}
