# The two commands a newcomer needs: `make demo` and `make test`. Both run the set-up first
# (idempotent: nothing is downloaded or installed twice).
BUILD_DIR ?= build
JOBS ?= 2
MODELS := third_party/models
MIXPREC := $(BUILD_DIR)/mixprec

.PHONY: setup build demo test test-unit test-e2e clean

setup:
	bash scripts/setup.sh

build: setup
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j$(JOBS)

# The main job on a real model: analyze the PP-OCRv4 detector, then its FP32 baseline.
demo: build
	$(MIXPREC) analyze $(MODELS)/ppocr_det.onnx
	$(MIXPREC) run $(MODELS)/ppocr_det.onnx --random 4 --seed 0 --input-shape x=1x3x640x640 --runs 10

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

test-unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS) -L unit

test-e2e: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS) -L e2e

clean:
	rm -rf $(BUILD_DIR)
