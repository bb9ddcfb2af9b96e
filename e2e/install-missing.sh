# Sourced by the test scripts: installs what the tests need and a clean machine lacks.

# Installs Debian's packages ($2...) when the command $1 is missing.
install_missing() {
  local command=$1
  shift
  if command -v "$command" >/dev/null 2>&1; then return; fi
  echo "installing $* (Debian's) for the tests" >&2
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}
