#include "tokenizer/pretokenizer.h"

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/regex.h"
#include "tokenizer/regex_classes.h"

namespace ember::llm {

namespace {

PreTokenizer::Behavior parse_behavior(const std::string& name, const std::string& where) {
  using B = PreTokenizer::Behavior;
  if (name == "Removed") return B::Removed;
  if (name == "Isolated") return B::Isolated;
  if (name == "MergedWithPrevious") return B::MergedWithPrevious;
  if (name == "MergedWithNext") return B::MergedWithNext;
  if (name == "Contiguous") return B::Contiguous;
  throw Error("unknown Split behavior \"" + name + "\"", where,
              "use Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
}

struct Segment {
  size_t start, end;
  bool is_match;
};

}  // namespace

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

PreTokenizer PreTokenizer::from_json(const nlohmann::json& spec, const std::string& where) {
  PreTokenizer p;
  if (!spec.is_null()) p.add(spec, where);
  return p;
}

void PreTokenizer::add(const nlohmann::json& spec, const std::string& where) {
  std::string type = spec.value("type", "");
  if (type == "Sequence") {
    const auto& list = spec.at("pretokenizers");
    for (size_t i = 0; i < list.size(); i++) add(list[i], where + ".pretokenizers[" + std::to_string(i) + "]");
  } else if (type == "Split") {
    Step s{Kind::Split};
    const auto& pattern = spec.at("pattern");
    if (pattern.contains("String")) {
      s.literal = pattern["String"].get<std::string>();
      if (s.literal.empty()) throw Error("Split has an empty string pattern", where, "give a non-empty pattern");
    } else if (pattern.contains("Regex")) {
      s.regex = std::make_shared<Regex>(pattern["Regex"].get<std::string>(), where + ".pattern.Regex");
    } else {
      throw Error("Split pattern is neither {\"String\": ...} nor {\"Regex\": ...}", where + ".pattern");
    }
    s.behavior = parse_behavior(spec.value("behavior", "Isolated"), where + ".behavior");
    s.invert = spec.value("invert", false);
    steps_.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    Step s{Kind::ByteLevel};
    s.add_prefix_space = spec.value("add_prefix_space", true);
    if (spec.value("use_regex", true)) s.regex = std::make_shared<Regex>(byte_level::kGpt2Pattern, where);
    steps_.push_back(std::move(s));
  } else if (type == "Digits") {
    // Upstream splits on numeric characters (Rust's char::is_numeric, at its Unicode version, not
    // the regex engine's): one piece per digit, or per run of digits.
    Step s{Kind::Split};
    s.regex = std::make_shared<Regex>(bracket_class(unicode::std_numeric()), where);
    s.behavior = spec.value("individual_digits", false) ? Behavior::Isolated : Behavior::Contiguous;
    steps_.push_back(std::move(s));
  } else if (type == "Metaspace") {
    Step s{Kind::Metaspace};
    s.literal = spec.value("replacement", "\u2581");
    std::string scheme = spec.value("prepend_scheme", spec.value("add_prefix_space", true) ? "always" : "never");
    if (scheme == "always") s.prepend = Prepend::Always;
    else if (scheme == "first") s.prepend = Prepend::First;
    else if (scheme == "never") s.prepend = Prepend::Never;
    else throw Error("unknown Metaspace prepend_scheme \"" + scheme + "\"", where + ".prepend_scheme", "use always, first or never");
    s.invert = spec.value("split", true);
    steps_.push_back(std::move(s));
  } else if (type == "Whitespace") {
    // Upstream: the matches of \w+|[^\w\s]+ are the words; the rest is dropped. Rust's \w also
    // covers marks and joiners, PCRE2's does not: spelled out.
    Step s{Kind::Split};
    const std::string word = "\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}";
    s.regex = std::make_shared<Regex>("[" + word + "]+|[^" + word + "\\s]+", where);
    s.behavior = Behavior::Removed;
    s.invert = true;
    steps_.push_back(std::move(s));
  } else if (type == "WhitespaceSplit" || type == "BertPreTokenizer") {
    Step s{Kind::Split};
    s.regex = std::make_shared<Regex>("\\s+", where);
    s.behavior = Behavior::Removed;
    steps_.push_back(std::move(s));
    if (type == "BertPreTokenizer") add({{"type", "Punctuation"}, {"behavior", "Isolated"}}, where);
  } else if (type == "Punctuation") {
    // Unicode punctuation (P*) and ASCII punctuation, one character per match.
    Step s{Kind::Split};
    s.regex = std::make_shared<Regex>("[\\p{P}\\x21-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7e]", where);
    s.behavior = parse_behavior(spec.value("behavior", "Isolated"), where + ".behavior");
    steps_.push_back(std::move(s));
  } else {
    throw Error("unsupported pre_tokenizer type \"" + type + "\"", where,
                "ember supports Split, ByteLevel, Digits, Metaspace, Whitespace, WhitespaceSplit, Punctuation, "
                "BertPreTokenizer and Sequence of them");
  }
}

void PreTokenizer::split(const Step& step, std::string_view piece, std::vector<std::string>& out) {
  // Matches and the text between them, covering the whole piece.
  std::vector<Segment> segs;
  size_t prev = 0;
  auto on_match = [&](size_t a, size_t b) {
    if (a != prev) segs.push_back({prev, a, false});
    segs.push_back({a, b, true});
    prev = b;
  };
  if (step.regex) {
    step.regex->find_all(piece, on_match);
  } else {
    for (size_t hit; (hit = piece.find(step.literal, prev)) != std::string_view::npos;) on_match(hit, hit + step.literal.size());
  }
  if (prev != piece.size()) segs.push_back({prev, piece.size(), false});
  if (step.invert)
    for (auto& s : segs) s.is_match = !s.is_match;

  // Combine segments as the behaviour says; `keep` false marks a removed delimiter.
  std::vector<std::pair<Segment, bool>> parts;
  bool previous_match = false;
  switch (step.behavior) {
    case Behavior::Removed:
      for (const auto& s : segs) parts.push_back({s, !s.is_match});
      break;
    case Behavior::Isolated:
      for (const auto& s : segs) parts.push_back({s, true});
      break;
    case Behavior::Contiguous:
      for (const auto& s : segs) {
        if (s.is_match == previous_match && !parts.empty()) parts.back().first.end = s.end;
        else parts.push_back({s, true});
        previous_match = s.is_match;
      }
      break;
    case Behavior::MergedWithPrevious:
      for (const auto& s : segs) {
        if (s.is_match && !previous_match && !parts.empty()) parts.back().first.end = s.end;
        else parts.push_back({s, true});
        previous_match = s.is_match;
      }
      break;
    case Behavior::MergedWithNext:
      for (size_t i = segs.size(); i-- > 0;) {
        const auto& s = segs[i];
        if (s.is_match && !previous_match && !parts.empty()) parts.back().first.start = s.start;
        else parts.push_back({s, true});
        previous_match = s.is_match;
      }
      std::reverse(parts.begin(), parts.end());
      break;
  }
  for (const auto& [s, keep] : parts)
    if (keep && s.end > s.start) out.emplace_back(piece.substr(s.start, s.end - s.start));
}

void PreTokenizer::run(std::string_view text, std::vector<std::string>& words, bool at_input_start) const {
  std::vector<std::string> pieces{std::string(text)}, next;
  for (const auto& step : steps_) {
    next.clear();
    for (size_t k = 0; k < pieces.size(); k++) {
      std::string& piece = pieces[k];
      if (piece.empty()) continue;
      if (step.kind == Kind::Split) {
        split(step, piece, next);
        continue;
      }
      if (step.kind == Kind::Metaspace) {
        // Spaces become the replacement; a replacement is prepended (always, or only to the
        // piece that begins the input); with `split`, each replacement starts a new word.
        std::string replaced;
        for (size_t p = 0, hit; p <= piece.size(); p = hit + 1) {
          hit = piece.find(' ', p);
          if (hit == std::string::npos) hit = piece.size();
          replaced.append(piece, p, hit - p);
          if (hit < piece.size()) replaced += step.literal;
        }
        bool prepend = step.prepend == Prepend::Always || (step.prepend == Prepend::First && at_input_start && k == 0);
        if (prepend && !replaced.starts_with(step.literal)) replaced.insert(0, step.literal);
        if (step.invert) {
          Step merged{Kind::Split};
          merged.literal = step.literal;
          merged.behavior = Behavior::MergedWithNext;
          split(merged, replaced, next);
        } else {
          next.push_back(std::move(replaced));
        }
        continue;
      }
      // ByteLevel: a prefix space per piece, the GPT-2 split, then the byte alphabet.
      if (step.add_prefix_space && piece[0] != ' ') piece.insert(piece.begin(), ' ');
      size_t first = next.size();
      if (step.regex) {
        Step isolated{Kind::Split, step.regex};
        split(isolated, piece, next);
      } else {
        next.push_back(piece);
      }
      for (size_t i = first; i < next.size(); i++) {
        std::string mapped;
        mapped.reserve(next[i].size() * 2);
        byte_level::encode(next[i], mapped);
        next[i] = std::move(mapped);
      }
    }
    pieces.swap(next);
  }
  for (auto& p : pieces)
    if (!p.empty()) words.push_back(std::move(p));
}

}  // namespace ember::llm
