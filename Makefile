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

# The main job on a real model, the PP-OCRv4 text detector, with the real pictures the set-up
# fetched: analyze it, measure the FP32 baseline, calibrate once, quantize to XINT8 and A16W8
# (reusing the statistics) and to BF16, and judge each against FP32. compare exits 3 when a
# model misses the accuracy criterion: that is a verdict, not a failure of the demo.
DATA := third_party/data
DEMO := work/demo
DET := $(MODELS)/ppocr_det.onnx
DET_DATA := --preprocess ppocr_det --image-size 320x320
demo: build
	mkdir -p $(DEMO)
	$(MIXPREC) analyze $(DET)
	$(MIXPREC) run $(DET) --data $(DATA)/eval $(DET_DATA) --runs 16
	for preset in XINT8 A16W8 BF16; do \
	  $(MIXPREC) quantize $(DET) --preset $$preset -o $(DEMO)/det_$$preset.onnx \
	    --calibration-data $(DATA)/calib $(DET_DATA) --stats $(DEMO)/det.stats.json || exit $$?; \
	  $(MIXPREC) compare $(DET) $(DEMO)/det_$$preset.onnx --data $(DATA)/eval $(DET_DATA); \
	  status=$$?; [ $$status -eq 0 ] || [ $$status -eq 3 ] || exit $$status; \
	done

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

test-unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS) -L unit

test-e2e: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS) -L e2e

clean:
	rm -rf $(BUILD_DIR)
