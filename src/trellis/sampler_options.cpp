#include "trellis/sampler_options.h"

#include <cmath>
#include <string>

#include "common/error.h"

namespace ember::trellis {

void SamplerOptions::validate() const {
  if (steps < 1) throw Error("steps must be at least 1, got " + std::to_string(steps), "--steps");
  if (!std::isfinite(cfg_strength)) throw Error("cfg strength must be finite", "--cfg");
  if (!(cfg_lo >= 0.0 && cfg_lo <= 1.0 && cfg_hi >= 0.0 && cfg_hi <= 1.0))
    throw Error("cfg interval must lie within [0, 1]", "--cfg-interval", "give LO,HI with 0 <= LO <= HI <= 1, e.g. 0.5,1.0");
  if (cfg_lo > cfg_hi) throw Error("cfg interval is reversed (LO > HI)", "--cfg-interval", "give LO,HI with LO <= HI, e.g. 0.5,1.0");
  if (!(rescale_t > 0.0) || !std::isfinite(rescale_t)) throw Error("rescale-t must be a positive number", "--rescale-t");
}

}  // namespace ember::trellis
