// Kernel defaults for CPU adapters (adapterType CPU, e.g. lavapipe), which run a workgroup's
// invocations as the SIMD lanes of one thread: barriers and workgroup-memory reductions cost far
// more there than on a GPU, and every per-lane load is a gather. The matvec geometry that suits
// them is one subgroup-wide workgroup whose lanes split each row's blocks and share 8 rows, with
// 16-byte loads (v3_both): the x block a lane loads serves all 8 rows. choose_kernels
// (kernel_choice.cpp) uses it on a CPU adapter for every shape a candidate tuned nowhere (no
// `adapter` key) does not list, and, where cpu_defaults() says the candidate was tuned on another
// adapter, for every shape, with the residual-MLP grid off; `ember tune` searches around it.
#pragma once

#include "formats/llm_pack.h"
#include "gpu/device.h"
#include "kernels/matmul_q4.h"
#include "kernels/matvec_q4.h"

namespace ember::llm {

kernels::MatvecGeometry cpu_matvec_geometry(const gpu::Device& device);
// The prefill matmul's geometry there (candidate prefillMatmul entries it does not list, under the
// same conditions): 4 x 32 threads, micro 4, K step 16, i.e. tiles of 16 tokens x 128 rows.
kernels::MatmulGeometry cpu_matmul_geometry();
// A CPU adapter, and a candidate whose `adapter` key names another adapter.
bool cpu_defaults(const formats::LlmPack& pack, const gpu::Device& device);

}  // namespace ember::llm
