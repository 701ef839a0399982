// Models over protobuf's 2 GB limit, written for tests without ever holding them in memory:
// the weights stream into the external data file as they are generated.
#pragma once

#include <cstdint>
#include <string>

namespace mixprec::testing {

struct LargeModelShape {
  int64_t width = 8192;  // input, output and every weight is width x width float32
  int layers = 9;        // 9 x 256 MiB = 2.25 GiB of weights with the default width
};

// Writes PATH (the graph) and PATH.data (the weights, 64-byte aligned, as save_model lays them
// out): "input" [1, width] float -> per layer i: MatMul "matmul_<i>" -> Relu "relu_<i>" (the
// last layer without Relu) -> "output" [1, width]. Weights are deterministic, scaled so
// activations stay near unit size through the chain. Returns the bytes of weight data.
uint64_t write_large_matmul_model(const std::string& path, const LargeModelShape& shape = {});

}  // namespace mixprec::testing
