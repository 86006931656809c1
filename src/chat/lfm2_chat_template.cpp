#include "chat/lfm2_chat_template.h"

namespace ember::llm {

// tools/golden/make_chat_template_goldens.py reads the text between the raw-string delimiters.
const std::string& lfm2_chat_template_source() {
  static const std::string source = R"jinja({#- LFM2's turns. The first system message and the tool list make the system turn; every
    other message is one turn, a tool result wrapped in the tool-response markers. Content that
    is not a string is written as JSON. -#}
{{- bos_token -}}
{%- set head = namespace(system="", skip_first=false) -%}
{%- if messages[0]["role"] == "system" -%}
  {%- set head.system = messages[0]["content"] -%}
  {%- set head.skip_first = true -%}
{%- endif -%}
{%- if tools -%}
  {%- set listing = namespace(text="") -%}
  {%- for tool in tools -%}
    {%- set listing.text = listing.text + ("" if loop.first else ", ") + (tool if tool is string else tool | tojson) -%}
  {%- endfor -%}
  {%- set head.system = head.system + ("\n" if head.system else "") + "List of tools: <|tool_list_start|>[" + listing.text + "]<|tool_list_end|>" -%}
{%- endif -%}
{%- if head.system -%}
  {{- "<|im_start|>system\n" + head.system + "<|im_end|>\n" -}}
{%- endif -%}
{%- for message in messages -%}
  {%- if not (loop.first and head.skip_first) -%}
    {%- set text = message["content"] if message["content"] is string else message["content"] | tojson -%}
    {%- if message["role"] == "tool" -%}
      {%- set text = "<|tool_response_start|>" + text + "<|tool_response_end|>" -%}
    {%- endif -%}
    {{- "<|im_start|>" + message["role"] + "\n" + text + "<|im_end|>\n" -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- "<|im_start|>assistant\n" -}}
{%- endif -%}
)jinja";
  return source;
}

}  // namespace ember::llm
