// A u32 on the GPU that a kernel sets nonzero when it could not do its work as designed (a wait for
// other workgroups that gave up because they were not all resident): what it wrote since is wrong.
// Such a kernel's record() hands the word to the Recorder (Recorder::watch); whatever reads the
// results back then learns of it: a ReadbackRing copies the words with the results of the same
// submit, and Device checks the words of any other submit at its next check(), wait or download.
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"

namespace ember::gpu {

class Buffer;

struct StatusWord {
  const Buffer* buffer = nullptr;
  uint64_t offset = 0;  // a multiple of 4
  std::string what;     // which kernel gave up, and what of its output is wrong
  std::string fix;      // what the user can do
  Error error(const std::string& where) const { return Error(what, where, fix); }
};

}  // namespace ember::gpu
