// TMA tensor maps, host side: cuTensorMapEncodeTiled from the driver the CUDA runtime already loaded
// (cudaGetDriverEntryPointByVersion: nothing links libcuda). Encoding is host-only and allocation-free, so the
// kernels that take a map by value (prefill's x / y maps, the decode bulk kernel's streamed x) stay graph-capturable.
#pragma once
#include <cuda.h>  // CUtensorMap
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000

namespace w4a16::kernels::cuda {

// The driver's cuTensorMapEncodeTiled, looked up once; an `unsupported` error naming it where the driver has none.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder();

}  // namespace w4a16::kernels::cuda
