// `ember bench <what>`: benchmarks that print a short table or JSON (medians, device named).
#include <cstdio>

#include "cli/commands.h"
#include "tune/ceilings.h"

namespace ember::cli {
namespace {

void add_bench_gpu(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("gpu", "measure this GPU's ceilings through Dawn: read bandwidth, per-dispatch cost, submit round trip");
  struct Opts {
    GpuOptions gpu;
    bool json = false;
    uint64_t mib = 1024;
    int repeats = 7;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_option("--mib", o->mib, "size of the buffer read, MiB (capped by the binding limit)");
  cmd->add_option("--repeats", o->repeats, "timed repeats after one warm-up");
  cmd->callback([o] {
    o->gpu.device.profiling = true;  // exact timestamps
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    tune::Ceilings c = tune::measure_ceilings(device, kernels, o->mib << 20, o->repeats);
    const auto& a = device.adapter();
    if (o->json) {
      nlohmann::json j = {{"device", a.to_json()}, {"ceilings", c.to_json()}, {"repeats", o->repeats}, {"statistic", "median"}};
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    std::printf("device: %s (%s, %s)\n", a.name().c_str(), a.backend.c_str(), a.type.c_str());
    std::printf("read bandwidth       %10.1f GB/s  (%.0f MiB, median of %d)\n", c.read_gbps, c.bytes_read / (1 << 20), o->repeats);
    std::printf("dispatch, GPU time   %10.2f us    (1000 tiny dispatches in one pass)\n", c.dispatch_gpu_us);
    std::printf("dispatch, CPU cost   %10.2f us    (encode + submit + wait, per dispatch)\n", c.dispatch_cpu_us);
    std::printf("submit + wait        %10.1f us\n", c.submit_wait_us);
  });
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "benchmarks (medians after warm-up; --json for machines)");
  bench->require_subcommand(1);
  add_bench_gpu(*bench);
  add_bench_ss_flow(*bench);
}

}  // namespace ember::cli
