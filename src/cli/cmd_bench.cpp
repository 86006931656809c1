// `ember bench <what>`: benchmarks that print a short table or JSON (medians, device named).
#include <algorithm>
#include <cstdio>

#include "cli/llm_options.h"
#include "common/error.h"
#include "tune/batch_bench.h"
#include "tune/ceilings.h"
#include "tune/llm_bench.h"

namespace ember::cli {
namespace {

void add_bench_gpu(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("gpu", "measure this GPU's ceilings through Dawn: read bandwidth, per-dispatch cost, submit round trip");
  struct Opts {
    GpuOptions gpu;
    bool json = false;
    uint64_t mib = 1024;
    int repeats = 7;
    uint32_t groups = 16384;
    uint32_t stage_groups = 128;
    uint64_t stage_kib = 0;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_option("--mib", o->mib, "size of the buffer read, MiB (capped by the binding limit)");
  cmd->add_option("--repeats", o->repeats, "timed repeats after one warm-up");
  cmd->add_option("--groups", o->groups, "workgroups (of 256 threads) sharing the read")->capture_default_str();
  cmd->add_option("--stage-groups", o->stage_groups, "workgroups (of 256 threads) of each dependent stage")->capture_default_str();
  cmd->add_option("--stage-kib", o->stage_kib, "weights each dependent stage also reads, KiB (a new slice each stage)")->capture_default_str();
  cmd->callback([o] {
    o->gpu.device.profiling = true;  // exact timestamps
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    tune::Ceilings c = tune::measure_ceilings(device, kernels,
                                                {.max_bytes = o->mib << 20, .repeats = o->repeats, .read_groups = o->groups, .stage_groups = o->stage_groups,
                                                 .stage_bytes = o->stage_kib << 10});
    const auto& a = device.adapter();
    if (o->json) {
      nlohmann::json j = {{"device", a.to_json()}, {"ceilings", c.to_json()}, {"repeats", o->repeats}, {"statistic", "median"}};
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    std::printf("device: %s (%s, %s)\n", a.name().c_str(), a.backend.c_str(), a.type.c_str());
    std::printf("read bandwidth       %10.1f GB/s  (%.0f MiB in %.1f us, %u workgroups, median of %d, round %d; the first %.1f)\n",
                c.read_gbps, c.bytes_read / (1 << 20), c.bytes_read / c.read_gbps / 1e3, c.read_groups, o->repeats, c.read_rounds,
                c.read_gbps_first);
    std::printf("dispatch, GPU time   %10.2f us    (up to 1000 tiny dispatches in one pass)\n", c.dispatch_gpu_us);
    std::printf("dependent stage      %10.2f us    (up to 1000 dispatches of %u workgroups in one pass, each reading the last one's output",
                c.stage_gpu_us, c.stage_groups);
    if (c.stage_bytes > 0) std::printf(" and %.0f KiB of weights", c.stage_bytes / 1024);
    std::printf(")\n");
    std::printf("dispatch, CPU cost   %10.2f us    (encode + submit + wait, per dispatch)\n", c.dispatch_cpu_us);
    std::printf("submit + wait        %10.1f us\n", c.submit_wait_us);
  });
}

void add_bench_llm(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("llm", "LLM speed: time to first token, prefill and decode tok/s per context, bytes and dispatches per "
                                          "token, achieved bandwidth vs the floor (medians after one warm-up)");
  struct Opts {
    LlmOptions llm;
    tune::LlmBenchOptions bench;
    bool json = false;
    uint64_t ceiling_mib = 1024;
  };
  auto o = std::make_shared<Opts>();
  o->llm.add_to(*cmd, /*with_sampling=*/false);
  cmd->add_option("--prompt", o->bench.prompt, "prompt tokens for time to first token and prefill")->capture_default_str();
  cmd->add_option("--gen", o->bench.gen, "decode steps timed at each context")->capture_default_str();
  cmd->add_option("--context", o->bench.contexts, "cache lengths to decode at (comma-separated)")->delimiter(',')->capture_default_str();
  cmd->add_option("--repeats", o->bench.repeats, "timed runs (after a warm-up: one run per context; first-token runs for 0.5 s)")->capture_default_str();
  cmd->add_option("--in-flight", o->bench.in_flight, "generator steps submitted ahead")->capture_default_str();
  cmd->add_option("--per-submit", o->bench.steps_per_submit, "generator steps recorded into one submit (at most half of --in-flight)")
      ->check(CLI::Range(1u, llm::Lfm2Model::kStepRing))
      ->capture_default_str();
  cmd->add_flag("--profile", o->bench.profile, "per-kernel GPU time of a decode step at each context, vs each kernel's floor");
  cmd->add_option("--ceiling-mib", o->ceiling_mib, "buffer read to measure the bandwidth ceiling, MiB")->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] {
    if (o->bench.contexts.empty()) throw Error("no --context given", "--context", "give cache lengths, e.g. --context 128,1024,2048");
    auto so = o->llm.session();
    so.device.profiling = true;  // exact timestamps
    so.model.quiet = o->llm.quiet || o->json;
    // The prompt in one submit: as few prefill chunks as memory allows (67.5 KB per token for the
    // seed shape).
    so.model.prefill_chunk = std::max(so.model.prefill_chunk, o->bench.prompt);
    llm::Session session(o->llm.model, so);
    tune::Ceilings c = tune::measure_ceilings(session.device(), session.model().kernels(), {.max_bytes = o->ceiling_mib << 20});
    tune::LlmBenchResult r = tune::bench_llm(session.model(), session.generator(), c, o->bench);
    r.candidate_key = session.pack().candidate().key;
    if (o->json) std::printf("%s\n", r.to_json().dump(2).c_str());
    else std::printf("%s", r.table().c_str());
  });
}

void add_bench_batch(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("batch", "the server's batched decode step: aggregate tok/s, GPU and CPU time per step at several "
                                            "numbers of sequences (medians after one warm-up)");
  struct Opts {
    LlmOptions llm;
    tune::BatchBenchOptions bench;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  o->llm.add_to(*cmd, /*with_sampling=*/false);
  cmd->add_option("--rows", o->bench.rows, "sequences decoded together (comma-separated)")->delimiter(',')->capture_default_str();
  cmd->add_option("--context", o->bench.context, "prompt tokens of each sequence before the timed steps")->capture_default_str();
  cmd->add_option("--steps", o->bench.steps, "decode steps timed per repeat")->capture_default_str();
  cmd->add_option("--repeats", o->bench.repeats, "timed runs after one warm-up")->capture_default_str();
  cmd->add_flag("--sample", o->bench.sample, "sample at temperature 1 (default: greedy)");
  cmd->add_flag("--profile", o->bench.profile, "per-kernel GPU time of a step at each row count");
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] {
    auto so = o->llm.session();
    so.device.profiling = true;  // exact timestamps
    so.model.quiet = o->llm.quiet || o->json;
    if (o->bench.rows.empty()) throw Error("no --rows given", "--rows", "give sequence counts, e.g. --rows 1,4,16");
    so.sequences = std::max<uint32_t>(1, *std::max_element(o->bench.rows.begin(), o->bench.rows.end()));
    llm::Session session(o->llm.model, so);
    const auto vocab = static_cast<uint32_t>(session.tokenizer().vocab_size());
    tune::BatchBenchResult r = tune::bench_batch(session.model(), vocab, o->bench);
    if (o->json) std::printf("%s\n", r.to_json().dump(2).c_str());
    else std::printf("%s", r.table().c_str());
  });
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "benchmarks (medians after warm-up; --json for machines)");
  bench->require_subcommand(1);
  add_bench_gpu(*bench);
  add_bench_ss_flow(*bench);
  add_bench_text_encoder(*bench);
  add_bench_text_to_3d(*bench);
  add_bench_llm(*bench);
  add_bench_batch(*bench);
}

}  // namespace ember::cli
