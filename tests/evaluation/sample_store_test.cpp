// The evaluation sample store: held and spilled samples read back exactly, and a damaged
// spill file is an error naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "evaluation/sample_store.h"
#include "mixprec/error.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

class SampleStoreTest : public testing::TempDirTest {};

// Sample i: a float image whose values encode i, an int64 scalar, and a one-tensor reference.
NamedTensors inputs_of(int i) {
  std::vector<float> values(2 * 3 * 5);
  for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(i) + 0.125f * static_cast<float>(k);
  Tensor count(DType::kInt64, {});
  count.as<int64_t>()[0] = -7 * i;
  return {{"image", Tensor::from_floats({1, 2, 3, 5}, values)}, {"count", count}};
}
NamedTensors reference_of(int i) {
  return {{"y", Tensor::from_floats(DType::kFloat16, {2, 2}, std::vector<float>{static_cast<float>(i), 2, 3, -0.5f})}};
}

TEST_F(SampleStoreTest, HeldAndSpilledSamplesReadBackExactly) {
  // Room for two samples of about 200 bytes each; the rest go to the file.
  SampleStore store(400, path("work"));
  for (int i = 0; i < 5; ++i) store.add(inputs_of(i), reference_of(i));
  EXPECT_EQ(store.size(), 5u);
  EXPECT_EQ(store.held(), 2u);
  EXPECT_EQ(store.spilled(), 3u);
  ASSERT_FALSE(store.spill_path().empty());
  EXPECT_EQ(fs::path(store.spill_path()).parent_path(), fs::path(path("work")));
  size_t visited = 0;
  store.for_each([&](size_t index, const NamedTensors& inputs, const NamedTensors& reference) {
    EXPECT_EQ(index, visited++);
    EXPECT_EQ(inputs, inputs_of(static_cast<int>(index)));
    EXPECT_EQ(reference, reference_of(static_cast<int>(index)));
  });
  EXPECT_EQ(visited, 5u);
  EXPECT_EQ(store.inputs(3), inputs_of(3));  // random access, after a full pass
  EXPECT_EQ(store.sample(0).reference, reference_of(0));
}

TEST_F(SampleStoreTest, ZeroBudgetSpillsEverySampleAndTheFileGoesWithTheStore) {
  std::string spill;
  {
    SampleStore store(0, "");  // no work dir: a temp file
    store.add(inputs_of(1), reference_of(1));
    EXPECT_EQ(store.held(), 0u);
    spill = store.spill_path();
    EXPECT_TRUE(fs::exists(spill));
    EXPECT_EQ(store.inputs(0), inputs_of(1));
  }
  EXPECT_FALSE(fs::exists(spill));
}

TEST_F(SampleStoreTest, DamagedSpillFileIsAnIoErrorNamingIt) {
  SampleStore store(0, path("work"));
  store.add(inputs_of(2), reference_of(2));
  // The image's first dimension (rank 4 after "image"'s name and type) becomes 2: the byte
  // size no longer matches the shape.
  {
    std::fstream file(store.spill_path(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(8 + 4 + 4 + 5 + 4 + 4);
    const int64_t two = 2;
    file.write(reinterpret_cast<const char*>(&two), sizeof two);
  }
  try {
    store.inputs(0);
    FAIL() << "a damaged record was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_EQ(e.file(), store.spill_path());
    EXPECT_NE(e.message().find("needs"), std::string::npos) << e.message();
  }
  fs::resize_file(store.spill_path(), 20);  // truncated
  EXPECT_THROW(store.inputs(0), Error);
}

}  // namespace
}  // namespace mixprec
