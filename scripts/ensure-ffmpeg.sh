#!/usr/bin/env bash
# Speech-to-text splits long recordings with ffmpeg (docs/audio.md); install Debian's when missing.
set -euo pipefail
command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends ffmpeg >/dev/null
else
  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends ffmpeg >/dev/null
fi
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null
