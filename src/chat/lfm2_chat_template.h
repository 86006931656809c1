// ember's Jinja text of LFM2's chat template: the same output as LiquidAI's chat_template.jinja
// (the facts in chat_template.h; goldens rendered by jinja2 in tests/fixtures/chat_templates/),
// written for ember. `ember synth lfm2` puts it in the checkpoint's tokenizer_config.json, so test
// packs carry a tool-capable template, and the server renders with it when a pack has none.
#pragma once

#include <string>

namespace ember::llm {

const std::string& lfm2_chat_template_source();

}  // namespace ember::llm
