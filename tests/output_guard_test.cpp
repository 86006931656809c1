// `--out` never destroys what ember did not write (src/common/output_guard.h): an existing file,
// a non-empty folder, a folder holding --from, --from itself; --force replaces only a previous
// ember output of the same kind; a pack killed by SIGTERM or SIGKILL in its write phase leaves
// nothing behind once the next run has been; outputs are checked before any work.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_util.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_guard.h"
#include "formats/lfm2_synth.h"
#include "formats/safetensors.h"
#include "temp_root.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

using test::TempRoot;

void write_text(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }

std::string q(const fs::path& p) {
  std::string s = "'";
  s += p.string();
  s += "'";
  return s;
}

// A tiny HF checkpoint once per process (the input of the pack runs below).
const fs::path& tiny_hf() {
  static TempRoot root("out_hf_source");
  static fs::path hf = [] {
    formats::synth_lfm2_checkpoint(formats::lfm2_preset("tiny"), root.dir / "hf", {});
    return root.dir / "hf";
  }();
  return hf;
}

// Everything under `dir`, recursively, as relative paths: what a run left behind.
std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

bool has_temporary(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".ember-tmp-") != std::string::npos) return true;
  return false;
}

// `ember ARGS` started with EMBER_TEST_STOP_BEFORE_COMMIT: returns its PID once it has stopped
// itself with its temporary output complete and not yet renamed.
pid_t start_stopped_in_write_phase(const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("EMBER_TEST_STOP_BEFORE_COMMIT", "1", 1);
    std::vector<std::string> argv = {test::ember_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execv(c[0], c.data());
    _exit(127);
  }
  int st = 0;
  EXPECT_EQ(waitpid(pid, &st, WUNTRACED), pid);
  EXPECT_TRUE(WIFSTOPPED(st)) << "the pack did not reach its write phase";
  return pid;
}

}  // namespace

TEST(OutputGuard, RefusesAnExistingFile) {
  TempRoot t("out_file");
  write_text(t.dir / "models", "precious");
  auto r = test::run_ember("pack lfm2 --from " + q(tiny_hf()) + " --out " + q(t.dir / "models"));
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find((t.dir / "models").string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("existing file"), std::string::npos) << r.out;
  EXPECT_EQ(test::run_ember("pack lfm2 --force --from " + q(tiny_hf()) + " --out " + q(t.dir / "models")).status, 1);
  EXPECT_EQ(read_file(t.dir / "models"), "precious");
}

TEST(OutputGuard, RefusesANonEmptyFolderWithOrWithoutForce) {
  TempRoot t("out_nonempty");
  fs::create_directories(t.dir / "models");
  write_text(t.dir / "models" / "notes.txt", "mine");
  for (const char* force : {"", "--force "}) {
    auto r = test::run_ember(std::string("pack lfm2 ") + force + "--from " + q(tiny_hf()) + " --out " + q(t.dir / "models"));
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.out.find((t.dir / "models").string()), std::string::npos) << r.out;
  }
  EXPECT_EQ(listing(t.dir), (std::vector<std::string>{"models", "models/notes.txt"}));
}

TEST(OutputGuard, RefusesAFolderContainingFromAndFromItself) {
  TempRoot t("out_contains");
  fs::create_directories(t.dir / "models");
  fs::copy(tiny_hf(), t.dir / "models" / "hf", fs::copy_options::recursive);
  const auto before = listing(t.dir);
  auto r = test::run_ember("pack lfm2 --from " + q(t.dir / "models" / "hf") + " --out " + q(t.dir / "models"));
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("contains --from"), std::string::npos) << r.out;
  r = test::run_ember("pack lfm2 --force --from " + q(t.dir / "models" / "hf") + " --out " + q(t.dir / "models" / "hf"));
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("same path as --from"), std::string::npos) << r.out;
  r = test::run_ember("pack lfm2 --from " + q(t.dir / "models" / "hf") + " --out " + q(t.dir / "models" / "hf" / "pack"));
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("inside --from"), std::string::npos) << r.out;
  EXPECT_EQ(listing(t.dir), before);
}

TEST(OutputGuard, ForceReplacesOnlyAPreviousOutputOfTheSameKind) {
  TempRoot t("out_force");
  const std::string pack = " --out " + q(t.dir / "pack");
  ASSERT_EQ(test::run_ember("pack lfm2 --quiet --from " + q(tiny_hf()) + pack).status, 0);
  auto r = test::run_ember("pack lfm2 --quiet --from " + q(tiny_hf()) + pack);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--force to replace"), std::string::npos) << r.out;
  r = test::run_ember("pack lfm2 --quiet --force --from " + q(tiny_hf()) + pack);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(has_temporary(t.dir));
  // A checkpoint ember wrote is not a pack: --force does not make it one.
  ASSERT_EQ(test::run_ember("synth lfm2 --shape tiny --out " + q(t.dir / "hf")).status, 0);
  EXPECT_NE(test::run_ember("pack lfm2 --quiet --force --from " + q(tiny_hf()) + " --out " + q(t.dir / "hf")).status, 0);
  EXPECT_EQ(test::run_ember("synth lfm2 --shape tiny --force --out " + q(t.dir / "hf")).status, 0);
  // A pack with a file of the user's beside it is theirs now.
  write_text(t.dir / "pack" / "notes.txt", "mine");
  EXPECT_NE(test::run_ember("pack lfm2 --quiet --force --from " + q(tiny_hf()) + pack).status, 0);
  EXPECT_TRUE(fs::exists(t.dir / "pack" / "notes.txt"));
}

TEST(OutputGuard, EmptyFolderIsFilled) {
  TempRoot t("out_empty");
  fs::create_directories(t.dir / "pack");
  auto r = test::run_ember("pack lfm2 --quiet --from " + q(tiny_hf()) + " --out " + q(t.dir / "pack"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(fs::is_regular_file(t.dir / "pack" / "runtime.json"));
}

TEST(OutputGuard, FileOutputsOfOtherCommands) {
  TempRoot t("out_files");
  write_text(t.dir / "ckpt.safetensors", "not ours");
  auto r = test::run_ember("synth trellis-ss-flow --tiny --seed 1 --out " + q(t.dir / "ckpt.safetensors"));
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_EQ(test::run_ember("synth trellis-ss-flow --tiny --seed 1 --force --out " + q(t.dir / "ckpt.safetensors")).status, 1);
  EXPECT_EQ(read_file(t.dir / "ckpt.safetensors"), "not ours");
  ASSERT_EQ(test::run_ember("synth trellis-ss-flow --tiny --seed 1 --out " + q(t.dir / "mine.safetensors")).status, 0);
  EXPECT_EQ(test::run_ember("synth trellis-ss-flow --tiny --seed 2 --force --out " + q(t.dir / "mine.safetensors")).status, 0);
  // A stage pack into a folder of the user's, and dequant onto its own input.
  fs::create_directories(t.dir / "stage");
  write_text(t.dir / "stage" / "keep.txt", "mine");
  EXPECT_NE(test::run_ember("pack trellis --quiet --stage ss-flow --from " + q(t.dir / "mine.safetensors") + " --out " + q(t.dir / "stage")).status, 0);
  ASSERT_EQ(test::run_ember("pack trellis --quiet --stage ss-flow --from " + q(t.dir / "mine.safetensors") + " --out " + q(t.dir / "sp")).status, 0);
  EXPECT_NE(test::run_ember("dequant --stage " + q(t.dir / "sp") + " --out " + q(t.dir / "mine.safetensors")).status, 0);
  EXPECT_NE(test::run_ember("dequant --stage " + q(t.dir / "sp") + " --out " + q(t.dir / "sp")).status, 0);
  EXPECT_TRUE(fs::exists(t.dir / "stage" / "keep.txt"));
  EXPECT_FALSE(has_temporary(t.dir));
}

// ss-flow on the synthetic seed-shape model would take minutes: an existing --out must fail at
// once, before the weights are made.
TEST(OutputGuard, SsFlowChecksItsOutputBeforeWorking) {
  TempRoot t("out_ssflow");
  fs::create_directories(t.dir / "latent.npy");
  auto r = test::run_ember("ss-flow --synthetic --cond /nonexistent.npy --neg-cond /nonexistent.npy --out " + q(t.dir / "latent.npy"));
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("existing directory"), std::string::npos) << r.out;
  r = test::run_ember("ss-flow --synthetic --cond /nonexistent.npy --neg-cond /nonexistent.npy --out " + q(t.dir / "missing" / "x.npy"));
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
}

TEST(OutputGuard, PackKilledBySigtermInItsWritePhaseLeavesNothing) {
  TempRoot t("out_sigterm");
  pid_t pid = start_stopped_in_write_phase({"pack", "lfm2", "--quiet", "--from", tiny_hf().string(), "--out", (t.dir / "pack").string()});
  EXPECT_TRUE(has_temporary(t.dir));
  kill(pid, SIGTERM);
  kill(pid, SIGCONT);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  EXPECT_TRUE(listing(t.dir).empty()) << testing::PrintToString(listing(t.dir));
  auto r = test::run_ember("pack lfm2 --quiet --from " + q(tiny_hf()) + " --out " + q(t.dir / "pack"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(fs::directory_iterator(t.dir)->path().filename(), "pack");
}

TEST(OutputGuard, PackKilledBySigkillIsCleanedByTheNextRun) {
  TempRoot t("out_sigkill");
  pid_t pid = start_stopped_in_write_phase({"pack", "lfm2", "--quiet", "--from", tiny_hf().string(), "--out", (t.dir / "pack").string()});
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_TRUE(has_temporary(t.dir));  // SIGKILL cannot be caught: the temporary stays...
  auto r = test::run_ember("pack lfm2 --quiet --from " + q(tiny_hf()) + " --out " + q(t.dir / "pack"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(has_temporary(t.dir));  // ...until the next run beside it
  EXPECT_EQ(listing(t.dir).front(), "pack");
  EXPECT_TRUE(fs::is_regular_file(t.dir / "pack" / "weights.bin"));
}

// A live process's temporary is not touched; a dead one's is.
TEST(OutputGuard, StaleTemporariesOnlyOfDeadProcesses) {
  TempRoot t("out_stale");
  const fs::path live = t.dir / ("x.ember-tmp-" + std::to_string(getpid()) + "-0badcafe");
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const fs::path dead = t.dir / ("y.ember-tmp-" + std::to_string(child) + "-0badcafe");
  const fs::path other = t.dir / "z.tmp-1-0badcafe";
  for (const auto& p : {live, dead, other}) fs::create_directories(p / "inner");
  remove_stale_temporaries(t.dir);
  EXPECT_TRUE(fs::exists(live));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(other));
}

TEST(OutputGuard, FailedFillLeavesNothing) {
  TempRoot t("out_fill");
  EXPECT_THROW(write_output_directory(OutputTarget(t.dir / "out"), [](const fs::path& tmp) {
                 write_file_atomic(tmp / "a", std::string("x"));
                 throw Error("boom");
               }),
               Error);
  EXPECT_TRUE(listing(t.dir).empty());
}
