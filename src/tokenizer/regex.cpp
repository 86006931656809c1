#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "common/error.h"
#include "tokenizer/regex_classes.h"
#include "tokenizer/utf8.h"

namespace ember::llm {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

Regex::Regex(const std::string& pattern, const std::string& where) : impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  auto compile = [&](const std::string& p) {
    return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
  };
  impl_->code = compile(expand_unicode_classes(pattern));
  if (!impl_->code) {
    // The error at its offset in the pattern as written, where it fails as written too.
    if (pcre2_code* original = compile(pattern)) {
      pcre2_code_free(original);
      throw Error("regex does not compile once its Unicode classes are spelled out as code point ranges: /" + pattern + "/",
                  where, "use a pattern in the syntax PCRE2 shares with Oniguruma");
    }
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error("regex does not compile at offset " + std::to_string(err_offset) + ": " +
                    reinterpret_cast<const char*>(msg) + " in /" + pattern + "/",
                where, "use a pattern in the syntax PCRE2 shares with Oniguruma");
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

void Regex::find_all(std::string_view text, const std::function<void(size_t, size_t)>& on_match) const {
  // One match-data block per thread: encode may run on several threads at once.
  thread_local std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create(8, nullptr), &pcre2_match_data_free);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, data.get(), nullptr)
                        : pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0 && rc != 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string("regex match failed: ") + reinterpret_cast<const char*>(msg), "pre-tokenizer");
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
    size_t start = ov[0], end = ov[1];
    on_match(start, end);
    if (end > start) {
      pos = end;
    } else {
      // An empty match: step over one code point, as Oniguruma's iterator does.
      if (end >= text.size()) return;
      int len = utf8::sequence_length(static_cast<unsigned char>(text[end]));
      pos = end + (len > 0 ? len : 1);
    }
  }
}

}  // namespace ember::llm
