// Reproducers of the defects fuzzing found (issue 18), as bytes made in code: the regression
// tests feed them to the library, and the fuzz build adds them to its seed corpora.
//
// Each entry is (file name, bytes); the name says what the input does to a careless reader.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace mixprec::testing {

using NamedBytes = std::vector<std::pair<std::string, std::string>>;

// Pictures: a 9-byte JPEG whose Huffman table declares 510 codes (out-of-bounds write in the
// stb_image decoder mixprec used before), a PNG with a corrupt header (was reported as
// "Corrupt JPEG"), a truncated PNG, and PNG/BMP/JPEG headers declaring gigapixel sizes.
NamedBytes hostile_pictures();

// npy/npz: a 200-byte npz whose deflated member declares 6 GiB (was allocated before any
// data were inflated), an npy header promising more data than the file has.
NamedBytes hostile_arrays();

// Config JSON: a regex nested 20,000 deep (std::regex compiled it recursively: stack
// overflow), JSON nested 300,000 deep under an unknown key (stack overflow), a number that
// overflows a double ("1e999": escaped as an internal error), a backtracking bomb.
NamedBytes hostile_configs();

// The 6 GiB npz above: a ZIP with one deflated member `name` holding `deflated`, declaring
// `declared_size` uncompressed bytes (ZIP64 sizes), CRC 0.
std::string zip_with_declared_size(const std::string& name, const std::string& deflated, uint64_t declared_size);

}  // namespace mixprec::testing
