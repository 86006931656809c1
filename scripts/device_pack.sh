#!/usr/bin/env bash
# Prepares .dev/ (git-ignored) for a run on a lent GPU machine: the built binaries next to Dawn's
# .so, the libraries the target image may lack, and Debian's Vulkan loader .deb. The device tool
# carries .dev/; scripts/device_run.sh runs there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mkdir -p .dev/bin .dev/libs .dev/debs
cp build/ember build/ember_tests build/ember_golden_check build/serve_load node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so .dev/bin/
# A/B runs against earlier builds (scripts/ab.sh fills .dev/base): .dev/base/ember ships as
# ember_base, .dev/base/ember_NAME as is.
if [ -f .dev/base/ember ]; then cp .dev/base/ember .dev/bin/ember_base; fi
for b in .dev/base/ember_*; do [ -f "$b" ] && cp "$b" .dev/bin/; done
for lib in libpcre2-8.so.0 libcrypto.so.3 libutf8proc.so.2 libcpp-httplib.so.0.11 libssl.so.3 libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do cp -L "/usr/lib/x86_64-linux-gnu/$lib" .dev/libs/; done
if ! ls .dev/debs/libvulkan1_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/ember-apt/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/ember-apt'
  apt-get $o update -qq
  (cd .dev/debs && apt-get $o download libvulkan1)
fi
# The device tool carries at most 64 MiB with the tracked tree: ship bin/ and libs/ as one xz tarball.
tar cJf .dev/bundle.tar.xz -C .dev bin libs
rm -rf .dev/bin .dev/libs
du -sh .dev
