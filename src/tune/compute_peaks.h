// What the GPU's arithmetic reaches through Dawn: f32 FMA and packed int8 dot products with
// accumulate (compute_peak.wgsl), GPU timestamps. The ceilings per-kernel rates are put against.
#pragma once

#include <nlohmann/json.hpp>

#include "gpu/kernel.h"

namespace ember::tune {

struct ComputePeaks {
  double fma_tflops = 0;   // f32, 2 flops per FMA
  double dot4_tops = 0;    // dot4I8Packed + accumulate, 8 ops per dot; 0 without the language feature
  nlohmann::json to_json() const { return {{"fma_tflops", fma_tflops}, {"dot4_tops", dot4_tops}}; }
};

// Each probe sized to run a few milliseconds; medians of `repeats` after a warm-up.
ComputePeaks measure_compute_peaks(const gpu::Device& device, gpu::KernelCache& kernels, int repeats = 5);

}  // namespace ember::tune
